import type { Db } from '../db/client.js';
import { dropBefore, ensurePartitions, type RetentionResult } from './queries.js';

const DAY_MS = 86_400_000;

export interface MaintenanceResult extends RetentionResult {
  /** Partitions made. */
  created: number;
}

/** The oldest instant retention keeps (`EVENTS_RETENTION_DAYS` before now); undefined keeps everything. */
export const retentionCutoff = (now: Date, retentionDays: number | undefined): Date | undefined =>
  retentionDays === undefined ? undefined : new Date(now.getTime() - retentionDays * DAY_MS);

/**
 * One pass of the periodic job: retention first (so that no partition is made only to be dropped), then
 * the partitions ahead of now.
 */
export async function maintainEvents(db: Db, now: Date, retentionDays: number | undefined): Promise<MaintenanceResult> {
  const cutoff = retentionCutoff(now, retentionDays);
  const removed = cutoff ? await dropBefore(db, cutoff) : { dropped: 0, deleted: 0, forgotten: 0 };
  const created = await ensurePartitions(db, now, cutoff);
  return { created, ...removed };
}
