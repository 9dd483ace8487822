import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { rowsOf } from '../db/queries/util.js';
import { query_cache } from '../db/schema/index.js';

export interface CachedAnswer {
  /** The answer as the JSON text it was stored as. */
  text: string;
  last_refresh: Date;
}

/**
 * The project's cached answers under `keys` (a dashboard's tiles) in one statement, by key; an expired
 * one is left out. A pure read: the hits are counted apart (`countHits`), since a counter written on
 * every read made every reader of a popular dashboard queue for the same rows' locks.
 */
export async function readCaches(db: Db, projectId: number, keys: string[]): Promise<Map<string, CachedAnswer>> {
  const out = new Map<string, CachedAnswer>();
  if (!keys.length) return out;
  const rows = await db.execute(
    sql`select cache_key, answer::text as text, last_refresh from ${query_cache}
      where project_id = ${projectId} and cache_key = any(${`{${[...new Set(keys)].join(',')}}`}::text[])
        and expires_at > now()`,
  );
  for (const row of rowsOf<{ cache_key: string; text: string; last_refresh: string }>(rows)) {
    out.set(row.cache_key, { text: row.text, last_refresh: new Date(row.last_refresh) });
  }
  return out;
}

/** How often a process writes the hits it counted. */
export const HITS_FLUSH_MS = 5_000;
const pendingHits = new Map<Db, Map<string, number>>();
let flushTimer: NodeJS.Timeout | undefined;

/** Counts a hit of a cached answer; the process writes its counts every HITS_FLUSH_MS, in one statement. */
export function countHit(db: Db, projectId: number, key: string): void {
  let counts = pendingHits.get(db);
  if (!counts) pendingHits.set(db, (counts = new Map()));
  const id = `${projectId}:${key}`;
  counts.set(id, (counts.get(id) ?? 0) + 1);
  flushTimer ??= setTimeout(() => {
    flushTimer = undefined;
    for (const handle of [...pendingHits.keys()]) void flushHits(handle).catch(() => {});
  }, HITS_FLUSH_MS).unref();
}

/** Writes the hits counted for `db` (on the timer, and when the app closes); rows gone meanwhile are skipped. */
export async function flushHits(db: Db): Promise<void> {
  const counts = pendingHits.get(db);
  pendingHits.delete(db);
  if (!counts?.size) return;
  const projects: number[] = [];
  const keys: string[] = [];
  const hits: number[] = [];
  for (const [id, n] of counts) {
    const at = id.indexOf(':');
    projects.push(Number(id.slice(0, at)));
    keys.push(id.slice(at + 1));
    hits.push(n);
  }
  const array = (items: (string | number)[]) => `{${items.join(',')}}`;
  await db.execute(
    sql`update ${query_cache} q set hits = q.hits + v.n
      from unnest(${array(projects)}::int[], ${array(keys)}::text[], ${array(hits)}::int[])
        as v(project_id, cache_key, n)
      where q.project_id = v.project_id and q.cache_key = v.cache_key`,
  );
}

/**
 * Stores an answer (replacing the key's older one, unless a newer one was stored meanwhile), then keeps
 * the project's cache within bounds: expired rows go, and beyond `maxRows` the least recently computed.
 */
export async function writeCache(
  db: Db,
  projectId: number,
  key: string,
  answer: { text: string; insightFields: string; last_refresh: Date; expires_at: Date },
  maxRows: number,
): Promise<void> {
  // One statement, so one commit (a flush of the WAL) per computed answer. The trim sees the rows as they were
  // before the insert, so it keeps the newest `maxRows - 1` others beside the row written.
  await db.execute(
    sql`with stored as (
        insert into ${query_cache}
          (project_id, cache_key, answer, insight_fields, last_refresh, bytes, expires_at, misses)
        values (${projectId}, ${key}, ${answer.text}::jsonb, ${answer.insightFields},
          ${answer.last_refresh.toISOString()}::timestamptz, ${Buffer.byteLength(answer.text)},
          ${answer.expires_at.toISOString()}::timestamptz, 1)
        on conflict (project_id, cache_key) do update set answer = excluded.answer,
          insight_fields = excluded.insight_fields, last_refresh = excluded.last_refresh, bytes = excluded.bytes,
          expires_at = excluded.expires_at, misses = ${query_cache}.misses + 1
        where ${query_cache}.last_refresh <= excluded.last_refresh
        returning 1)
      delete from ${query_cache} where project_id = ${projectId} and cache_key <> ${key} and (expires_at <= now()
        or cache_key in (select cache_key from ${query_cache} where project_id = ${projectId}
          order by last_refresh desc offset ${Math.max(0, maxRows - 1)}))`,
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
