// Spec-driven fuzzing, the second half of the operations (see helpers/fuzz.ts).
import { fuzzOperations } from './helpers/fuzz.js';

fuzzOperations(1);
