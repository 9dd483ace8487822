// Spec-driven fuzzing, the first half of the operations (see helpers/fuzz.ts).
import { fuzzOperations } from './helpers/fuzz.js';

fuzzOperations(0);
