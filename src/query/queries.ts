import { eq, sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Sql, TransactionSql } from 'postgres';
import type { Db } from '../db/client.js';
import { projects } from '../db/schema/index.js';
import { allPipelined } from '../db/pipelined.js';
import { ClientGone, clientLeft, whenClientGone } from '../core/client-gone.js';

/** Marks an asynchronous query's statement so that other processes can find and cancel it. */
export interface RunTag {
  /** Carried by the transaction (and so shown in pg_stat_activity) while the statement runs. */
  applicationName: string;
  /** Told the backend's pid before the statement starts; false stops the run there. */
  onBackend(pid: number): Promise<boolean>;
  /**
   * Aborted when the run is cancelled or failed (from any process): the statement is then cancelled until
   * it stops. A cancel another process sends by pid alone is lost when it lands while the backend waits
   * between the transaction's statements; this one is resent while the statement runs.
   */
  signal: AbortSignal;
}

/** Thrown by runReadOnly when its tag's onBackend refused the run. */
export class RunRefused extends Error {}

/** What bounds a query's transaction besides its timeout (see query-role.ts for how they are found). */
export interface QueryLimits {
  /** The restricted role the statement runs as (SET LOCAL ROLE); null runs it as the connecting user. */
  role: string | null;
  /** temp_file_limit in MB; null where the connecting user may not set it. */
  tempFileLimitMb: number | null;
  workMemMb: number;
}

export interface StreamOptions {
  timeoutMs: number;
  /** The answer's cap in bytes (its rows' JSON texts, a byte between each): past it the statement fails. */
  maxBytes?: number;
  tag?: RunTag | undefined;
  limits?: QueryLimits | undefined;
  /** The session's timezone for the statement (the project's); the connection's own when absent. */
  timezone?: string;
  /**
   * Told each row's first column as PostgreSQL wrote it (the compiled query's JSON array, as text),
   * while the rows arrive; false stops the statement there (the rows so far are all there will be).
   */
  onRow(json: Buffer): boolean;
}

const dialect = new PgDialect();

const clientOf = (db: Db) => (db as unknown as { $client: Sql }).$client;

/**
 * The statement (whose one column is `r`, a row's JSON, as run.ts and kinds/execute.ts write it) with its
 * answer's size checked by PostgreSQL:
 * the running total of the rows' bytes goes to query_answer_within (drizzle/0028), which fails the
 * statement (SQLSTATE PH413) at the first row past the cap, before that row is sent. The running sum
 * has no ORDER BY of its own, so the rows keep the statement's order.
 */
function capped(statement: SQL, maxBytes: number): SQL {
  return sql`select w.r from (select s.r, sum(octet_length(s.r::text) + 1) over (rows unbounded preceding) as total
    from (${statement}) as s) as w where query_answer_within(w.total, ${maxBytes}::bigint)`;
}

/**
 * Runs a compiled Query API statement in a read-only transaction that PostgreSQL cancels after
 * `timeoutMs`, with `limits` set for that transaction only, and streams its rows to `onRow` as they
 * arrive. The rows are read in one execution, not through a cursor: PostgreSQL plans no parallel scan
 * for a statement read in fetches, and an aggregate over a project's events took 1.5 times as long. The
 * answer's size is bounded in the statement itself (`capped`), so no row past the cap is ever sent.
 */
export async function streamReadOnly(db: Db, statement: SQL, opts: StreamOptions): Promise<void> {
  const ms = String(Math.max(1, Math.floor(opts.timeoutMs)));
  const { sql: text, params } = dialect.sqlToQuery(
    opts.maxBytes === undefined ? statement : capped(statement, opts.maxBytes),
  );
  const limits = opts.limits;
  // Its client left while it waited for a slot: nobody reads the answer.
  if (!opts.tag && clientLeft()) throw new ClientGone();
  const client = clientOf(db);
  await client.begin(async (tx: TransactionSql) => {
    // One round trip: read-only (a compiled query never writes; this makes sure), the timeout, the
    // memory and temporary files a sort or hash may use, and a plan made for each query's own values
    // (a prepared statement's generic plan cannot see the project id or the LIMIT, and planned
    // aggregations over a project twice as slow), and no JIT: with it, a cancelled cross join of partitioned
    // events kept running on PostgreSQL 15 (its cancel was lost), and tenants' queries are small enough that
    // compiling them costs more than it saves.
    // temp_file_limit is set before the role changes: only the connecting user (a superuser, or one
    // granted SET on it) may set it.
    // The project's timezone makes a date-time plus days or months keep its wall-clock time across a change of
    // daylight saving time there, as HogQL's date arithmetic does in ClickHouse.
    const optional: [string, string][] = [];
    if (limits?.tempFileLimitMb) optional.push(['temp_file_limit', `${limits.tempFileLimitMb}MB`]);
    if (opts.timezone) optional.push(['TimeZone', opts.timezone]);
    const settings = tx.unsafe(
      `select set_config('transaction_read_only', 'on', true), set_config('statement_timeout', $1, true),
        set_config('plan_cache_mode', 'force_custom_plan', true), set_config('work_mem', $2, true),
        set_config('jit', 'off', true)` +
        optional.map(([name], i) => `, set_config('${name}', $${i + 3}, true)`).join(''),
      [ms, `${limits?.workMemMb ?? 4}MB`, ...optional.map(([, value]) => value)],
    );
    // The application name lasts as long as the transaction, so a cancel that matches it can only reach
    // this statement, not a later one of the pooled connection. The connection check makes the backend
    // notice within a second that the process which sent the statement is gone (killed), rather than
    // running on until the statement timeout with nobody to answer.
    const tagged = opts.tag
      ? tx.unsafe<{ pid: number }[]>(
          `select set_config('application_name', $1, true),
            set_config('client_connection_check_interval', '1000', true), pg_backend_pid() as pid`,
          [opts.tag.applicationName],
        )
      : undefined;
    // The role last, in a statement of its own (sent in the same round trip): from here on the
    // transaction reads only what the role was granted.
    const role = limits?.role ? tx.unsafe(`select set_config('role', $1, true)`, [limits.role]) : undefined;
    await allPipelined([settings, tagged, role]);
    const pid = tagged ? (await tagged)[0]!.pid : undefined;
    if (opts.tag && pid !== undefined && !(await opts.tag.onBackend(pid))) throw new RunRefused();
    if (opts.tag?.signal.aborted) throw new RunRefused();

    // Rows past what `onRow` wants are few (the statement's LIMIT is one over the rows kept) and
    // bounded by the cap, so they are read and dropped rather than cancelled mid-way.
    // A throw inside forEach would break the connection's reading, so `onRow`'s is kept for after.
    let stopped = false;
    let failure: unknown;
    const pending = tx.unsafe(text, params as never[]).raw();
    // A request's statement is cancelled when its client leaves (an asynchronous run, tagged, is not: its
    // client polls for it later); the error says so, and is not reported as the database's.
    let gone = false;
    const unwatch = opts.tag
      ? cancelOnAbort(client, pid!, opts.tag)
      : whenClientGone(() => {
          gone = true;
          // A cancel that cannot reach the server leaves the statement to its timeout: nothing more to do.
          void Promise.resolve(pending.cancel() as unknown).catch(() => {});
        });
    try {
      await pending.forEach((row) => {
        if (stopped) return;
        try {
          if (!opts.onRow((row as unknown as Buffer[])[0]!)) stopped = true;
        } catch (err) {
          failure = err;
          stopped = true;
        }
      });
    } catch (err) {
      throw gone ? new ClientGone() : err;
    } finally {
      unwatch();
    }
    if (failure !== undefined) throw failure;
  });
}

/**
 * Once the run's signal aborts (at once if it has), cancels the tagged backend's statement every 100 ms
 * until the returned function is called. Only a backend still in the run's transaction (its application
 * name) and running a statement is signalled: PostgreSQL drops a cancel that arrives while its backend
 * waits for the next statement, and the name keeps a late cancel off whatever the pooled connection
 * runs next.
 */
function cancelOnAbort(client: Sql, pid: number, tag: RunTag): () => void {
  let done = false;
  const cancel = async () => {
    while (!done) {
      await client`select pg_cancel_backend(pid) from pg_stat_activity
        where pid = ${pid} and application_name = ${tag.applicationName} and state = 'active'`.catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const onAbort = () => void cancel();
  if (tag.signal.aborted) onAbort();
  else tag.signal.addEventListener('abort', onAbort, { once: true });
  return () => {
    done = true;
    tag.signal.removeEventListener('abort', onAbort);
  };
}

/** streamReadOnly's rows, parsed: for small statements (tests, checks) that want the values. */
export async function runReadOnly(db: Db, statement: SQL, timeoutMs: number, tag?: RunTag): Promise<unknown[][]> {
  const rows: unknown[][] = [];
  await streamReadOnly(db, statement, {
    timeoutMs,
    tag,
    onRow: (json) => rows.push(JSON.parse(json.toString('utf8'))) > 0,
  });
  return rows;
}

/** The project's test account filters (PostHog's property filter list in its settings). */
export async function projectTestAccountFilters(db: Db, teamId: number): Promise<unknown[]> {
  const [row] = await db
    .select({ filters: projects.test_account_filters })
    .from(projects)
    .where(eq(projects.id, teamId));
  return row?.filters ?? [];
}
