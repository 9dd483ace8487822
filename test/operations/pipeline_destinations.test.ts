import t from 'tap';
import { runFamilySuite } from '../helpers/family-suite.js';

await runFamilySuite(t, 'pipeline_destinations');
