import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { networkPolicy } from '../net/index.js';
import { secretBox } from '../secrets/index.js';
import { HogDeliveryWorker } from './deliver.js';
import { deliveryRetryDelay } from './settings.js';
import type { PgBoss } from 'pg-boss';

export { HogDeliveryWorker } from './deliver.js';
export { refreshTestAccountFilters } from './save.js';

/** The destinations' delivery worker of a process that runs workers (server with WORKER on, `npm run worker`). */
export function createDeliveryWorker(
  db: Db,
  jobs: { boss(): Promise<PgBoss> },
  config: Config,
  log?: (msg: string, err?: unknown) => void,
): HogDeliveryWorker {
  return new HogDeliveryWorker(db, () => jobs.boss(), {
    box: secretBox(config),
    policy: networkPolicy(config.allowPrivateNetworks),
    siteUrl: config.siteUrl ?? `http://${config.host}:${config.port}`,
    retryDelaySeconds: deliveryRetryDelay(config),
    perFunctionConcurrency: config.hogFunctionConcurrency,
    ...(log ? { log } : {}),
  });
}
