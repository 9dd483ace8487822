import { sql } from 'drizzle-orm';
import type { Database } from './client.js';
import { rowsOf } from './queries/util.js';

/** Connections a process opens besides its pool: the job queue's pool and the LISTEN connection. */
export const EXTRA_CONNECTIONS = 4 + 1;

/**
 * A warning when this process's connections cannot fit in the server's `max_connections` beside
 * those already open, or undefined. Every process of a deployment takes up to DATABASE_POOL_SIZE + 5,
 * so N processes need N × (DATABASE_POOL_SIZE + 5) ≤ max_connections − reserved connections.
 */
// Another role's sessions show no backend_type (PostgreSQL hides it without pg_read_all_stats), so a
// hidden session attached to a database counts as a client: processes connecting as different roles
// then still see each other's connections (at worst a passing autovacuum worker is counted too).
export async function connectionBudgetWarning(database: Database, poolSize: number): Promise<string | undefined> {
  const result = await database.db.execute(sql`
    select current_setting('max_connections')::int as max,
           current_setting('superuser_reserved_connections')::int
             + coalesce(nullif(current_setting('reserved_connections', true), ''), '0')::int as reserved,
           (select count(*) from pg_stat_activity where pid <> pg_backend_pid()
              and (backend_type = 'client backend' or (backend_type is null and datid is not null)))::int as used`);
  const [row] = rowsOf<{ max: number; reserved: number; used: number }>(result);
  if (!row) return undefined;
  const mine = poolSize + EXTRA_CONNECTIONS;
  const free = row.max - row.reserved - row.used;
  if (mine <= free) return undefined;
  return (
    `PostgreSQL allows ${row.max} connections (${row.reserved} reserved for superusers) and ${row.used} are open; ` +
    `this process may open ${mine} (DATABASE_POOL_SIZE ${poolSize} + ${EXTRA_CONNECTIONS}), so requests may get 503 ` +
    'when they are all in use. Lower DATABASE_POOL_SIZE so that ' +
    `processes × (DATABASE_POOL_SIZE + ${EXTRA_CONNECTIONS}) ` +
    `fits in max_connections − reserved, or raise max_connections.`
  );
}
