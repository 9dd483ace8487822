import { sql } from 'drizzle-orm';
import { rowsOf } from '../../src/db/queries/util.js';
import type { Db } from '../../src/db/client.js';

/**
 * Columns a request may legitimately touch without changing anything: authentication records when a
 * key was last used (PostHog does the same), before the request is refused for another reason, and
 * when a dashboard was last retrieved (PostHog's `last_accessed_at`, written by reads), and the query
 * cache's hit counts (summed in each process and written every few seconds, whatever request is running).
 */
const VOLATILE = ['last_used_at', 'last_accessed_at', 'hits'];
/**
 * Tables a timer rewrites whatever request is running: the events' counts, folded from their deltas every few
 * seconds. They follow `events`, which is fingerprinted.
 */
const FOLDED = ['event_counts', 'event_count_deltas'];

export async function rows<T = Record<string, unknown>>(db: Db, query: ReturnType<typeof sql>): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

let cachedQuery: string | undefined;

/**
 * A digest of every row of every table in the public schema (volatile columns left out): two equal
 * fingerprints mean no request in between created, changed or removed anything. Tables are found
 * through information_schema, so tables added by later migrations are covered without edits. The
 * test databases hold a few hundred rows, so hashing them whole costs a few milliseconds.
 */
export async function fingerprint(db: Db): Promise<Record<string, string>> {
  if (!cachedQuery) {
    const tables = (
      await rows<{ table_name: string }>(
        db,
        sql`select table_name from information_schema.tables
          where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`,
      )
    ).filter((t) => !FOLDED.includes(t.table_name));
    const strip = VOLATILE.map((c) => ` - '${c}'`).join('');
    cachedQuery = tables
      .map(({ table_name: name }) => {
        const ident = `"${name.replace(/"/g, '""')}"`;
        return `select '${name.replace(/'/g, "''")}' as t,
                  count(*)::text || ':' || coalesce(md5(string_agg(r, ',' order by r)), '') as d
                from (select (to_jsonb(x)${strip})::text as r from ${ident} x) s`;
      })
      .join('\nunion all\n');
  }
  const result = await rows<{ t: string; d: string }>(db, sql.raw(cachedQuery));
  return Object.fromEntries(result.map((r) => [r.t, r.d]));
}

/** Table names whose digest differs between two fingerprints. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((n) => before[n] !== after[n]);
}
