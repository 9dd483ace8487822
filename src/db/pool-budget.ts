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
  return budgetWarning(database.db, poolSize, EXTRA_CONNECTIONS, 'PostgreSQL', 'DATABASE_POOL_SIZE');
}

/**
 * The same warning for the DATABASE_READ_URL replica, where a process opens only its pool (no job
 * queue, no LISTEN): N processes need N × DATABASE_POOL_SIZE of the replica's max_connections.
 */
export async function replicaBudgetWarning(database: Database, poolSize: number): Promise<string | undefined> {
  if (!database.readUrl) return undefined;
  return budgetWarning(database.read, poolSize, 0, 'The read replica', 'DATABASE_POOL_SIZE');
}

async function budgetWarning(
  db: Database['db'],
  poolSize: number,
  extra: number,
  server: string,
  variable: string,
): Promise<string | undefined> {
  const result = await db.execute(sql`
    select current_setting('max_connections')::int as max,
           current_setting('superuser_reserved_connections')::int
             + coalesce(nullif(current_setting('reserved_connections', true), ''), '0')::int as reserved,
           (select count(*) from pg_stat_activity where pid <> pg_backend_pid()
              and (backend_type = 'client backend' or (backend_type is null and datid is not null)))::int as used`);
  const [row] = rowsOf<{ max: number; reserved: number; used: number }>(result);
  if (!row) return undefined;
  const mine = poolSize + extra;
  const free = row.max - row.reserved - row.used;
  if (mine <= free) return undefined;
  const plus = extra ? ` + ${extra}` : '';
  return (
    `${server} allows ${row.max} connections (${row.reserved} reserved for superusers) and ${row.used} are open; ` +
    `this process may open ${mine} (${variable} ${poolSize}${plus}), so requests may get 503 ` +
    `when they are all in use. Lower ${variable} so that ` +
    `processes × ${extra ? `(${variable}${plus})` : variable} ` +
    `fits in max_connections − reserved, or raise max_connections.`
  );
}
