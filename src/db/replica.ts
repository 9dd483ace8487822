import { sql } from 'drizzle-orm';
import type { Db } from './client.js';
import { rowsOf } from './queries/util.js';

/**
 * `read` once it has replayed everything the primary had written when this was called, or `primary` if the
 * replica is still behind after `waitMs` (or cannot say: it is down, or is not a replica of `primary`).
 * A reader that must see every write committed before it started (a batch export of an interval that has
 * ended) reads from the replica only when the replica holds all of them.
 */
export async function caughtUpReader(primary: Db, read: Db, waitMs: number): Promise<{ db: Db; replica: boolean }> {
  if (read === primary) return { db: primary, replica: false };
  const [at] = rowsOf<{ lsn: string }>(await primary.execute(sql`select pg_current_wal_lsn()::text as lsn`));
  if (!at) return { db: primary, replica: false };
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      const [row] = rowsOf<{ ok: boolean | null }>(
        await read.execute(sql`select pg_last_wal_replay_lsn() >= ${at.lsn}::pg_lsn as ok`),
      );
      if (row?.ok) return { db: read, replica: true };
    } catch {
      return { db: primary, replica: false };
    }
    if (Date.now() >= until) return { db: primary, replica: false };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
