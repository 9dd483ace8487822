import { createHash } from 'node:crypto';
import type { Sql } from 'postgres';
import type { Db } from '../db/client.js';
import { sqlState } from '../core/sql-state.js';
import type { QueryLimits } from './queries.js';
import { COUNTS_TABLES, TABLES } from '../hogql/tables.js';

/**
 * The tables the Query API's compiler reads (events, with their persons, distinct ids and counts): the only
 * ones its role may read. A table the compiler starts to name must be added here.
 */
export const QUERY_TABLES = [...TABLES, ...COUNTS_TABLES] as const;

/**
 * Columns of other tables the insight kinds read (a project's timezone, for its buckets): granted
 * column by column, so no other column of those tables (a project's token) is readable.
 */
export const QUERY_COLUMNS = { projects: ['id', 'timezone'] } as const;

/**
 * The restricted role of a database's Query API statements. Roles belong to the whole cluster, so the
 * name carries the database's (one role per database: two databases of a server, or the test suite's
 * database per file, never share or fight over one), made safe as an identifier and short enough.
 */
export function queryRoleName(database: string): string {
  const plain = database.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const name = `${plain}_query`;
  if (name === `${database}_query` && name.length <= 63) return name;
  return `${plain.slice(0, 40)}_${createHash('sha256').update(database).digest('hex').slice(0, 12)}_query`;
}

export interface QuerySandbox {
  limits: QueryLimits;
  /** What could not be set up (the connecting user's missing rights), for one line at start; null if nothing. */
  warning: string | null;
}

/**
 * Makes the Query API's restricted role for this database, idempotently (every start re-grants, so a
 * table recreated by a migration is readable again): NOLOGIN, SELECT on QUERY_TABLES and nothing else
 * of the schema, and the connecting user a member so that a transaction may SET LOCAL ROLE to it.
 * Where the connecting user may not create roles (a managed database), statements run as that user,
 * still read-only and with the per-transaction limits; the warning says so. temp_file_limit can only
 * be set by a superuser (or a user granted SET on it); where it cannot, the warning says that too.
 */
export async function prepareQuerySandbox(
  db: Db,
  limits: { tempFileLimitMb: number; workMemMb: number },
): Promise<QuerySandbox> {
  const client = (db as unknown as { $client: Sql }).$client;
  const problems: string[] = [];
  let role: string | null = null;
  try {
    role = await client.begin(async (tx) => {
      // Processes starting together on one database take turns (a concurrent GRANT fails otherwise).
      await tx`select pg_advisory_xact_lock(727275)`;
      const [{ db: database }] = (await tx`select current_database() as db`) as unknown as [{ db: string }];
      const name = queryRoleName(database);
      const id = tx(name);
      const [exists] = await tx`select 1 as ok from pg_roles where rolname = ${name}`;
      if (!exists) await tx`create role ${id} nologin noinherit`;
      await tx`grant ${id} to current_user`;
      await tx`revoke all on all tables in schema public from ${id}`;
      await tx`revoke all on all sequences in schema public from ${id}`;
      await tx`grant usage on schema public to ${id}`;
      await tx`grant select on ${tx(QUERY_TABLES as unknown as string[])} to ${id}`;
      for (const [table, columns] of Object.entries(QUERY_COLUMNS)) {
        await tx`grant select (${tx(columns as unknown as string[])}) on ${tx(table)} to ${id}`;
      }
      // The answer-size check every query statement calls (drizzle/0028).
      await tx`grant execute on function query_answer_within(bigint, bigint) to ${id}`;
      return name;
    });
  } catch (err) {
    if (sqlState(err) !== '42501') throw err;
    problems.push(
      'the database user may not create roles, so queries run as that user (read-only, with their time and ' +
        'memory limits)',
    );
  }
  let tempFiles = true;
  try {
    await client.begin(async (tx) => {
      await tx`select set_config('temp_file_limit', ${`${limits.tempFileLimitMb}MB`}, true)`;
    });
  } catch (err) {
    if (sqlState(err) !== '42501') throw err;
    tempFiles = false;
    problems.push('it may not set temp_file_limit, so a query’s temporary files are not bounded');
  }
  return {
    limits: { role, tempFileLimitMb: tempFiles ? limits.tempFileLimitMb : null, workMemMb: limits.workMemMb },
    warning: problems.length ? `Query API: ${problems.join('; ')}.` : null,
  };
}

export interface ReplicaSandbox {
  /** The limits of query transactions on the replica; null when queries must stay on the primary. */
  limits: QueryLimits | null;
  warning: string | null;
}

/**
 * Checks that query transactions on the DATABASE_READ_URL replica get the same sandbox as on the primary.
 * The role and its grants are made on the primary (prepareQuerySandbox) and reach the replica by
 * replication, a moment later on a first start: so the replica is asked, for up to `waitMs`, whether its
 * user may take the role. A replica where it cannot (its URL names another user, or replication is
 * stopped) is not used for queries: they stay on the primary, with a warning, rather than run without the
 * role. temp_file_limit is checked on the replica too (it is set per transaction there).
 */
export async function prepareReplicaSandbox(read: Db, primary: QueryLimits, waitMs = 10_000): Promise<ReplicaSandbox> {
  const client = (read as unknown as { $client: Sql }).$client;
  const until = Date.now() + waitMs;
  if (primary.role) {
    for (;;) {
      const [row] = (await client`
        select pg_is_in_recovery() as standby,
               exists (select 1 from pg_roles where rolname = ${primary.role})
                 and pg_has_role(current_user, ${primary.role}, 'MEMBER') as member`) as unknown as [
        { standby: boolean; member: boolean },
      ];
      if (row.member) break;
      if (Date.now() > until) {
        return {
          limits: null,
          warning:
            `DATABASE_READ_URL: its user may not act as the query role ${primary.role} (it is made on the primary ` +
            'and replicated; the replica must use the same user), so Query API statements run on the primary.',
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  let tempFileLimitMb = primary.tempFileLimitMb;
  if (tempFileLimitMb) {
    try {
      await client.begin(async (tx) => {
        await tx`select set_config('temp_file_limit', ${`${tempFileLimitMb}MB`}, true)`;
      });
    } catch (err) {
      if (sqlState(err) !== '42501') throw err;
      tempFileLimitMb = null;
    }
  }
  return {
    limits: { ...primary, tempFileLimitMb },
    warning:
      tempFileLimitMb === primary.tempFileLimitMb
        ? null
        : 'DATABASE_READ_URL: its user may not set temp_file_limit, so a query’s temporary files on the replica ' +
          'are not bounded.',
  };
}
