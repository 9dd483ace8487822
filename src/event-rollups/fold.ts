import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/queries/util.js';

/** How often each process folds the count deltas (a pass another process is running is skipped). */
export const FOLD_EVERY_MS = 10_000;

/**
 * Folds the events' count deltas into the counts (drizzle/0035: `event_counts_fold`), so that the readers of
 * counts read few rows. Returns how many delta rows were folded; 0 when another process was folding.
 */
export async function foldEventCounts(db: Db): Promise<number> {
  const rows = await db.execute(sql`select event_counts_fold()::text as n`);
  return Number(rowsOf<{ n: string }>(rows)[0]?.n ?? 0);
}

/** Folds every FOLD_EVERY_MS until stopped; a failed pass is logged and the next one tries again. */
export function startFolding(db: Db, log: (msg: string, err: unknown) => void): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = foldEventCounts(db).catch((err) => log('folding the event counts failed', err));
  }, FOLD_EVERY_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
