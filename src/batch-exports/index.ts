import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { JobEngine } from './engine.js';
import { ExportWorker } from './worker.js';
import { secretBox } from '../secrets/index.js';

export { JobEngine } from './engine.js';
export { ExportWorker } from './worker.js';

/** The job engine of a process; only a process that runs a worker supervises (maintenance, cron). */
export function createJobEngine(
  database: Database,
  config: Config,
  supervise: boolean,
  log?: (msg: string, err?: unknown) => void,
): JobEngine {
  return new JobEngine(database, {
    supervise,
    retryLimit: config.exportRetries,
    // A run whose attempt failed is retried well within the heartbeat timeout.
    retryDelaySeconds: Math.max(1, Math.min(10, Math.round(config.exportHeartbeatTimeout / 6))),
    runTimeoutSeconds: 6 * 3600,
    heartbeatSeconds: config.exportHeartbeatTimeout / 2,
    ...(log ? { log } : {}),
  });
}

export function createWorker(
  database: Database,
  engine: JobEngine,
  config: Config,
  log?: (msg: string, err?: unknown) => void,
): ExportWorker {
  return new ExportWorker(database, engine, {
    concurrency: config.exportConcurrency,
    batchSize: config.exportBatchSize,
    secrets: secretBox(config),
    allowPrivateNetworks: config.allowPrivateNetworks,
    staleSeconds: config.exportHeartbeatTimeout,
    ...(log ? { log } : {}),
  });
}
