import type { PgBoss } from 'pg-boss';
import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { EventsMaintenance, type MaintenanceOptions } from './worker.js';

export { EventsMaintenance, MAINTENANCE_QUEUE } from './worker.js';
export { maintainEvents, retentionCutoff, type MaintenanceResult } from './maintain.js';
export { ensurePartitions, dropBefore, listPartitions } from './queries.js';

/** The periodic events job of a process that runs workers (the server with WORKER on, `npm run worker`). */
export function createEventsMaintenance(
  db: Db,
  jobs: { boss(): Promise<PgBoss> },
  config: Config,
  log?: MaintenanceOptions['log'],
  done?: MaintenanceOptions['done'],
): EventsMaintenance {
  return new EventsMaintenance(db, () => jobs.boss(), {
    retentionDays: config.eventsRetentionDays,
    ...(log ? { log } : {}),
    ...(done ? { done } : {}),
  });
}
