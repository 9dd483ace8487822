import { randomUUID } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { traceQuery } from '../core/tracing.js';
import { CommitOutcomeUnknown, commitOutcome } from './commit-outcome.js';
import { isConnectionLost } from './connection-lost.js';
import { openEmbedded, type EmbeddedCluster } from './embedded.js';
import { Reachability, tcpSocketOptions } from './reachability.js';
import * as schema from './schema/index.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/**
 * A transaction's handle. It is a `Db` (drizzle's transaction extends its database), so a query written for
 * `Db` takes it as it is; the name says where a function expects to run inside one.
 */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface Database {
  db: Db;
  /**
   * Where reads that may lag a moment behind the writes go (the Query API, insight results, the events
   * listing, batch export reads): the DATABASE_READ_URL replica's pool, or `db` itself without one.
   * Nothing that writes, or reads what its own request just wrote, uses it.
   */
  read: Db;
  /** The replica's URL when `read` is one. */
  readUrl?: string;
  /** The server's URL, for a job engine that brings its own driver (libpq's form: a socket folder is `?host=`). */
  url: string;
  /**
   * Runs `fn` for every NOTIFY on `channel`, from this or any other process, and `onListen` each time
   * the channel is listened to again after the connection dropped (notifications may have been missed).
   */
  listen(channel: string, fn: (payload: string) => void, onListen?: () => void): Promise<void>;
  /**
   * The application_name of this process's LISTEN connection: unique to the process, and gone from
   * pg_stat_activity when the process is (or its connection drops).
   */
  listenerName: string;
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Runs `fn` after a transaction of this process that changed who may do what has committed (the
   * access_changed trigger marks it; drizzle/0019_access_changes.sql), before the transaction's caller
   * gets its result: a workflow that revokes access returns once `fn` (the auth cache's invalidation) is done.
   */
  onAccessChange(fn: () => Promise<void>): void;
  ping(): Promise<void>;
  /** The folder of the embedded cluster, its socket and log, when this process opened one. */
  embeddedHome?: string;
  /** False while the database is known to be unreachable (requests then get 503 at once). */
  available(): boolean;
  close(): Promise<void>;
}

export interface DbOptions {
  /** postgres:// URL; when unset the embedded PostgreSQL in `dataDir` is used. */
  url?: string | undefined;
  /** postgres:// URL of a streaming replica of `url`'s server (see Database.read); its pool is `poolSize` too. */
  readUrl?: string | undefined;
  /** The embedded cluster's folder. */
  dataDir?: string;
  /**
   * Told the text of every statement this process sends on its pools (postgres.js's `debug` hook), before
   * it is sent: for tests that check what the app asks of the database.
   */
  onStatement?: (text: string) => void;
  poolSize?: number;
  /**
   * Embedded only: whether this process owns the cluster (the server), refusing to share the data
   * folder with another owner; otherwise (the CLI) it works beside a running server.
   */
  exclusive?: boolean;
}

const migrationsFolder = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle');

export async function openDatabase(opts: DbOptions): Promise<Database> {
  const poolSize = opts.poolSize ?? 10;
  let cluster: EmbeddedCluster | undefined;
  if (!opts.url) {
    cluster = await openEmbedded(opts.dataDir ?? '.data', {
      exclusive: opts.exclusive ?? true,
      // The pool, the job engine's pool, LISTEN, the migration lock, and the CLI beside the server.
      settings: { maxConnections: Math.max(50, poolSize + 30) },
    });
  }
  let database: Database & { migrate(): Promise<void> };
  try {
    if (opts.readUrl && !opts.url) throw new Error("A read replica (readUrl) needs the primary's url");
    database = await openPostgres(opts.url ?? cluster!.url, poolSize, opts.onStatement);
  } catch (err) {
    await cluster?.stop();
    throw err;
  }
  try {
    await database.migrate();
  } catch (err) {
    await database.close();
    await cluster?.stop();
    throw err;
  }
  if (opts.readUrl) {
    // The replica's pool is opened like the primary's (connections made as queries need them); it is
    // never migrated, listened on or written to.
    const replica = await openPostgres(opts.readUrl, poolSize, opts.onStatement);
    const primaryClose = database.close;
    database = {
      ...database,
      read: replica.db,
      readUrl: opts.readUrl,
      async close() {
        await Promise.all([primaryClose(), replica.close()]);
      },
    };
  }
  if (!cluster) return database;
  return {
    ...database,
    embeddedHome: cluster.home,
    async close() {
      try {
        await database.close();
      } finally {
        await cluster.stop();
      }
    },
  };
}

/**
 * postgres.js reads no `host` parameter from a URL (it would send it to the server as a setting),
 * so a socket folder given the way libpq and node-postgres take it becomes the `host` option.
 */
export function socketOptions(url: string): { url: string; host?: string } {
  const u = new URL(url);
  const host = u.searchParams.get('host');
  if (!host?.startsWith('/')) return { url };
  u.searchParams.delete('host');
  return { url: u.toString(), host };
}

/**
 * The start of the application_name of each process's LISTEN connection (then `:` and the process's own
 * id, see Database.listenerName). pg_stat_activity shows it for every session whatever role reads it (a
 * session's query text is hidden from other roles), so processes
 * connecting as different roles still count each other as listeners.
 */
export const LISTENER_APPLICATION_NAME = 'posthog-api:listen';

type PostgresClient = import('postgres').Sql;

type AfterCommit = (accessChanged: boolean) => Promise<void>;

/**
 * This process's queries not answered yet, for the pool's metrics: postgres.js gives a query its `state`
 * (the backend it went to) when it sends it, so one without is still waiting for a connection.
 */
const unanswered = new Set<{ state: unknown }>();
/** Off until metrics are served, so a process without them pays nothing per query. */
let counting = false;

/** Starts counting, and returns how many of this process's queries wait for a connection or run. */
export function countPoolQueries(): () => { waiting: number; running: number } {
  counting = true;
  return poolQueries;
}

/** Transactions waiting for a connection of their own (their BEGIN is postgres.js's, not counted above). */
let transactionsWaiting = 0;

function poolQueries(): { waiting: number; running: number } {
  let queued = 0;
  for (const query of unanswered) if (!query.state) queued++;
  return { waiting: queued + transactionsWaiting, running: unanswered.size - queued };
}

/** `query`, counted in `unanswered` from the moment it runs (when awaited) until it settles. */
function counted<T extends Thenable>(query: T): T {
  if (!counting) return query;
  const then = query.then;
  const entry = query as unknown as { state: unknown };
  // biome-ignore lint/suspicious/noThenProperty: the query is a promise; its own `then` is wrapped, not added.
  query.then = function (this: T, onFulfilled, onRejected) {
    unanswered.add(entry);
    return then.call(
      this,
      (value: unknown) => {
        unanswered.delete(entry);
        return onFulfilled ? onFulfilled(value) : value;
      },
      (err: unknown) => {
        unanswered.delete(entry);
        if (onRejected) return onRejected(err);
        throw err;
      },
    );
  };
  return query;
}

interface Thenable {
  then(onFulfilled?: (v: unknown) => unknown, onRejected?: (e: unknown) => unknown): unknown;
}

/** A postgres.js client whose `unsafe` prepares, as do the clients it hands to transactions. */
function preparingClient<T extends PostgresClient | import('postgres').TransactionSql>(
  client: T,
  afterCommit?: AfterCommit,
): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (query: string, params?: unknown[], options?: object) =>
          counted(traceQuery(target.unsafe(query, params as never[], { ...options, prepare: true }), query));
      }
      if (prop === 'begin')
        return (...args: unknown[]) => beginKnowingOutcome(target as PostgresClient, args, afterCommit);
      if (prop === 'savepoint') {
        const open = Reflect.get(target, prop, receiver) as (...args: unknown[]) => unknown;
        return (...args: unknown[]) => {
          const fn = args.pop() as (tx: import('postgres').TransactionSql) => unknown;
          return open.call(target, ...args, (tx: import('postgres').TransactionSql) => fn(preparingClient(tx)));
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
}

/**
 * `sql.begin(...args)`, where a COMMIT whose answer is lost with its connection is answered by what
 * happened instead of by the lost connection: once the work is done, the transaction's id (if it
 * wrote anything) is read, and if the COMMIT then fails for want of a connection, the commit log is
 * asked on another connection. A committed transaction returns its result, so a client is never told
 * that a write it made failed; an aborted one throws the connection's error, and one whose outcome
 * cannot be learnt throws CommitOutcomeUnknown.
 *
 * The same read tells whether the transaction changed who may do what (the access_changed trigger's
 * mark); a committed one then runs `afterCommit` before its result is returned.
 */
async function beginKnowingOutcome(sql: PostgresClient, args: unknown[], afterCommit?: AfterCommit): Promise<unknown> {
  const fn = args.pop() as (tx: import('postgres').TransactionSql) => unknown;
  let xid: string | null = null;
  let accessChanged = false;
  let result: unknown;
  let waiting = counting;
  if (waiting) transactionsWaiting++;
  const started = () => {
    if (waiting) transactionsWaiting--;
    waiting = false;
  };
  try {
    await sql.begin(...(args as [string]), async (tx) => {
      started();
      const work = fn(preparingClient(tx));
      result = await (Array.isArray(work) ? Promise.all(work) : work);
      const [row] = await tx<{ xid: string | null; access: string | null }[]>`
        select pg_current_xact_id_if_assigned()::text as xid,
               current_setting('posthog.access_changed', true) as access`;
      xid = row?.xid ?? null;
      accessChanged = row?.access === 'on';
      return result;
    });
  } catch (err) {
    started();
    if (xid === null || !isConnectionLost(err)) throw err;
    const outcome = await commitOutcome(sql, xid);
    if (outcome !== 'committed') throw outcome === 'aborted' ? err : new CommitOutcomeUnknown(err);
  }
  if (afterCommit) await afterCommit(accessChanged);
  return result;
}

async function openPostgres(
  url: string,
  max: number,
  onStatement?: (text: string) => void,
): Promise<Database & { migrate(): Promise<void> }> {
  const reach = new Reachability();
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const { migrate } = await import('drizzle-orm/postgres-js/migrator');
  const socket = socketOptions(url);
  const options = {
    ...(socket.host ? { host: socket.host } : {}),
    max,
    // postgres.js hands each query to the next busy connection in turn, up to 100 queued behind the
    // running one, so a backend that loses its CPU for a moment holds all of them. Four keeps each
    // connection's round trips overlapped, and the rest wait in the client for the first free slot: under
    // 50 concurrent event definitions pages (bench, 2 cores) p99 fell from 180-198 ms to 79 ms, with
    // throughput unchanged; one deep cost organization retrieve two fifths of its throughput.
    max_pipeline: 4,
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
    // Queries queued during an outage are retried soon, each failing fast, rather than after back-offs of up to 20 s.
    backoff: () => 0.05,
    ...tcpSocketOptions(url, reach),
    ...(onStatement ? { debug: (_connection: number, query: string) => onStatement(query) } : {}),
  };
  const sql = postgres(socket.url, options);
  // postgres.js listens on a connection of its own, named after the client that opened it: this
  // client only ever listens, so its name marks the connection (see LISTENER_APPLICATION_NAME).
  const listenerName = `${LISTENER_APPLICATION_NAME}:${randomUUID()}`;
  const listener = postgres(socket.url, {
    ...options,
    max: 1,
    connection: { application_name: listenerName },
  });
  // drizzle sends unnamed queries with `prepare: false`, so PostgreSQL would parse and plan each one
  // anew; postgres.js's own default is to prepare every statement once per connection, so restore it,
  // inside transactions (and their savepoints) too.
  const accessHooks: (() => Promise<void>)[] = [];
  const preparing = preparingClient(sql, async (accessChanged) => {
    if (accessChanged) for (const hook of accessHooks) await hook();
  });
  const db = drizzle({ client: preparing, schema }) as unknown as Db;
  return {
    db,
    read: db,
    url,
    async migrate() {
      // Several processes may start at once; the advisory lock, held on a connection of its own, lets
      // one of them migrate at a time.
      const lock = postgres(socket.url, {
        ...(socket.host ? { host: socket.host } : {}),
        max: 1,
        onnotice: () => {},
        connect_timeout: 5,
      });
      try {
        await lock`select pg_advisory_lock(727274)`;
        await migrate(db as never, { migrationsFolder });
      } finally {
        await lock.end({ timeout: 5 });
      }
    },
    async listen(channel, fn, onListen) {
      await listener.listen(channel, (payload) => fn(payload), onListen);
    },
    listenerName,
    async notify(channel, payload) {
      await sql.notify(channel, payload);
    },
    onAccessChange(fn) {
      accessHooks.push(fn);
    },
    async ping() {
      await sql`select 1`;
    },
    available: () => reach.admit(),
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), listener.end({ timeout: 5 })]);
    },
  };
}
