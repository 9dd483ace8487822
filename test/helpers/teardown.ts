// tap's `after` script: stops the run's embedded cluster (setup.ts started it).
import { stopCluster } from '../../src/db/embedded.js';
import { TEST_CLUSTER_DIR } from './db.js';

if (!process.env.DATABASE_URL) await stopCluster(TEST_CLUSTER_DIR);
