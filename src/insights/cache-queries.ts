import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/queries/util.js';
import { query_cache } from '../db/schema/index.js';

export interface CachedAnswer {
  /** The answer as the JSON text it was stored as. */
  text: string;
  last_refresh: Date;
}

/** The project's cached answer under `key`, counted as a hit; undefined when none or expired. */
export async function readCache(db: Db, projectId: number, key: string): Promise<CachedAnswer | undefined> {
  const rows = await db.execute(
    sql`update ${query_cache} set hits = hits + 1
      where project_id = ${projectId} and cache_key = ${key} and expires_at > now()
      returning answer::text as text, last_refresh`,
  );
  const [row] = rowsOf<{ text: string; last_refresh: string }>(rows);
  return row ? { text: row.text, last_refresh: new Date(row.last_refresh) } : undefined;
}

/**
 * Stores an answer (replacing the key's older one, unless a newer one was stored meanwhile), then keeps
 * the project's cache within bounds: expired rows go, and beyond `maxRows` the least recently computed.
 */
export async function writeCache(
  db: Db,
  projectId: number,
  key: string,
  answer: { text: string; last_refresh: Date; expires_at: Date },
  maxRows: number,
): Promise<void> {
  await db.execute(
    sql`insert into ${query_cache} (project_id, cache_key, answer, last_refresh, bytes, expires_at)
      values (${projectId}, ${key}, ${answer.text}::jsonb, ${answer.last_refresh.toISOString()}::timestamptz,
        ${Buffer.byteLength(answer.text)}, ${answer.expires_at.toISOString()}::timestamptz)
      on conflict (project_id, cache_key) do update set answer = excluded.answer, last_refresh = excluded.last_refresh,
        bytes = excluded.bytes, expires_at = excluded.expires_at
      where ${query_cache}.last_refresh <= excluded.last_refresh`,
  );
  await db.execute(
    sql`delete from ${query_cache} where project_id = ${projectId} and (expires_at <= now() or cache_key in (
      select cache_key from ${query_cache} where project_id = ${projectId}
      order by last_refresh desc offset ${maxRows}))`,
  );
}

/** Size and hits of the whole cache (for the benchmark's report). */
export async function cacheStats(db: Db): Promise<{ rows: number; bytes: number; hits: number }> {
  const rows = await db.execute(
    sql`select count(*)::int as rows, coalesce(sum(bytes), 0)::bigint::float8 as bytes,
      coalesce(sum(hits), 0)::bigint::float8 as hits from ${query_cache}`,
  );
  return rowsOf<{ rows: number; bytes: number; hits: number }>(rows)[0]!;
}
