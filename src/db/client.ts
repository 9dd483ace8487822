import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { Reachability, tcpSocketOptions } from './reachability.js';
import * as schema from './schema/index.js';

// One type for both drivers: drizzle's pglite and postgres-js databases are both PgDatabase.
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** The raw handles, for a job engine that brings its own driver: the PGlite instance, or the URL. */
  pglite?: PGlite;
  url?: string;
  /**
   * Runs `fn` for every NOTIFY on `channel`, from this or any other process, and `onListen` each time
   * the channel is listened to again after the connection dropped (notifications may have been missed).
   */
  listen(channel: string, fn: (payload: string) => void, onListen?: () => void): Promise<void>;
  notify(channel: string, payload: string): Promise<void>;
  ping(): Promise<void>;
  /** False while the database is known to be unreachable (requests then get 503 at once). */
  available(): boolean;
  close(): Promise<void>;
}

export interface DbOptions {
  /** postgres:// URL; when unset the embedded PGlite is used. */
  url?: string | undefined;
  /** PGlite data folder; `memory://` keeps it in memory. */
  dataDir?: string;
  /** A gzipped PGlite data dump to start an in-memory database from (tests). */
  template?: string | undefined;
  poolSize?: number;
}

const migrationsFolder = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle');

export class DataDirLockedError extends Error {}

export async function openDatabase(opts: DbOptions): Promise<Database> {
  const database = opts.url ? await openPostgres(opts.url, opts.poolSize ?? 20) : await openPglite(opts);
  try {
    await database.migrate();
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

async function openPglite(opts: DbOptions): Promise<Database & { migrate(): Promise<void> }> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const { migrate } = await import('drizzle-orm/pglite/migrator');
  const dataDir = opts.dataDir ?? 'memory://';
  let release: (() => Promise<void>) | undefined;
  if (!dataDir.startsWith('memory://')) {
    // PGlite does not stop a second process from opening the same folder, and that process's writes
    // would be lost silently, so the folder belongs to one process at a time.
    const lockfile = await import('proper-lockfile');
    mkdirSync(dataDir, { recursive: true });
    try {
      release = await lockfile.lock(dataDir, { lockfilePath: `${resolve(dataDir)}.lock`, stale: 15_000, update: 5_000 });
    } catch (err) {
      if ((err as { code?: string }).code === 'ELOCKED') {
        throw new DataDirLockedError(
          `The data folder ${dataDir} is in use by another process; stop it first, or set DATA_DIR or DATABASE_URL.`,
        );
      }
      throw err;
    }
  }
  const client =
    dataDir.startsWith('memory://') && opts.template && existsSync(opts.template)
      ? new PGlite({ loadDataDir: new Blob([readFileSync(opts.template)]) })
      : new PGlite(dataDir);
  await client.waitReady;
  const db = drizzle({ client, schema }) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    pglite: client,
    migrate: () => migrate(db as never, { migrationsFolder }),
    async listen(channel, fn) {
      await client.listen(channel, fn);
    },
    async notify(channel, payload) {
      await client.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async ping() {
      await client.query('select 1');
    },
    available: () => true,
    async close() {
      await client.close();
      await release?.();
    },
  };
}

type PostgresClient = import('postgres').Sql;

/** A postgres.js client whose `unsafe` prepares, as do the clients it hands to transactions. */
function preparingClient<T extends PostgresClient | import('postgres').TransactionSql>(client: T): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (query: string, params?: unknown[], options?: object) =>
          target.unsafe(query, params as never[], { ...options, prepare: true });
      }
      if (prop === 'begin' || prop === 'savepoint') {
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

async function openPostgres(url: string, max: number): Promise<Database & { migrate(): Promise<void> }> {
  const reach = new Reachability();
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const { migrate } = await import('drizzle-orm/postgres-js/migrator');
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
    // Queries queued during an outage are retried soon, each failing fast, rather than after back-offs of up to 20 s.
    backoff: () => 0.05,
    ...tcpSocketOptions(url, reach),
  });
  // drizzle sends unnamed queries with `prepare: false`, so PostgreSQL would parse and plan each one
  // anew; postgres.js's own default is to prepare every statement once per connection, so restore it,
  // inside transactions (and their savepoints) too.
  const preparing = preparingClient(sql);
  const db = drizzle({ client: preparing, schema }) as unknown as Db;
  return {
    db,
    kind: 'postgres',
    url,
    async migrate() {
      // Several processes may start at once; the advisory lock, held on a connection of its own, lets
      // one of them migrate at a time.
      const lock = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
      try {
        await lock`select pg_advisory_lock(727274)`;
        await migrate(db as never, { migrationsFolder });
      } finally {
        await lock.end({ timeout: 5 });
      }
    },
    async listen(channel, fn, onListen) {
      await sql.listen(channel, (payload) => fn(payload), onListen);
    },
    async notify(channel, payload) {
      await sql.notify(channel, payload);
    },
    async ping() {
      await sql`select 1`;
    },
    available: () => reach.admit(),
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}

