import { finished } from 'node:stream/promises';
import postgres from 'postgres';
import { sqlState } from '../../core/sql-state.js';
import type { PostgresConfig } from '../destination-config.js';
import { pgSocket } from '../destination-network.js';
import { withDeadline } from '../deadline.js';
import { exportModel, type ExportColumn, type RecordBatch } from '../records.js';
import { NonRetryableError, type DestinationContext, type DestinationWriter } from './types.js';

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** The temporary table a batch is copied into on its way to the target when it may hold a key the table has. */
const STAGE = 'batch_export_stage';

/**
 * Batches copied straight into the target each take a subtransaction; past 64 in one transaction
 * PostgreSQL's snapshots overflow to pg_subtrans, which slows every reader of the table, so later
 * batches go through the temporary table instead.
 */
const MAX_DIRECT_BATCHES = 60;

/** Errors that come from the configuration (credentials, names, privileges), not from a passing fault. */
function isConfigError(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return /^(28|3D|3F|42)/.test(code) || code === 'ENOTFOUND';
}

function wrap(err: unknown): unknown {
  if (err instanceof NonRetryableError) return err;
  if (isConfigError(err)) return new NonRetryableError(`PostgreSQL refused the export: ${(err as Error).message}`);
  return err;
}

/**
 * Sends `data` with COPY FROM STDIN. postgres.js never settles the stream of a COPY the server
 * refuses (a duplicate key, a bad value); the refusal only reaches the statement, so it is taken from there.
 */
async function copyIn(conn: postgres.ReservedSql, statement: string, data: Buffer): Promise<void> {
  const query = conn.unsafe(statement) as postgres.PendingQuery<postgres.Row[]> & { reject(err: unknown): void };
  let refuse: (err: unknown) => void = () => {};
  const refused = new Promise<never>((_, reject) => (refuse = reject));
  refused.catch(() => {});
  const reject = query.reject;
  query.reject = (err) => {
    refuse(err);
    reject(err);
  };
  const stream = await query.writable();
  stream.end(data);
  await Promise.race([finished(stream), refused]);
}

/** How format_type() names the column types of `ExportColumn`. */
const TYPE_NAMES: Record<ExportColumn['type'], string> = {
  text: 'text',
  timestamptz: 'timestamp with time zone',
  bigint: 'bigint',
  jsonb: 'jsonb',
  integer: 'integer',
  boolean: 'boolean',
};

/** One connection to the destination database, through the policy's socket. */
export async function destinationClient(
  c: PostgresConfig,
  network: DestinationContext['network'],
  timeouts: { connectTimeoutSeconds: number; idleTimeoutSeconds: number },
): Promise<postgres.Sql> {
  return postgres({
    host: c.host,
    port: c.port ?? 5432,
    database: c.database,
    username: c.user,
    password: c.password,
    ssl: c.has_self_signed_cert ? { rejectUnauthorized: false } : 'prefer',
    max: 1,
    // postgres.js takes a `socket` factory, though its types do not declare it.
    ...({ socket: await pgSocket(network, c) } as object),
    connect_timeout: timeouts.connectTimeoutSeconds,
    idle_timeout: timeouts.idleTimeoutSeconds,
    onnotice: () => {},
  });
}

/**
 * Copies each batch (COPY FROM STDIN) into a temporary table and inserts it from there with one
 * statement, all inside one transaction per run: a failed attempt leaves nothing behind. Records with
 * a key (`uuid` for events, `team_id` + `distinct_id` for persons) are upserted on it, so re-exporting
 * an interval never duplicates rows. When the table's columns have the types this export gives them
 * (always, for a table it created), the batches come as column values, which COPY reads into the
 * table's types; otherwise as JSON objects, converted with `json_populate_record` as they always were.
 */
export async function postgresWriter({
  exp,
  source,
  network,
  deadlineMs = 300_000,
}: DestinationContext): Promise<DestinationWriter> {
  const c = exp.destination_config as PostgresConfig;
  const schema: string = c.schema || 'public';
  const table: string = c.table_name || exportModel(exp);
  const target = `${ident(schema)}.${ident(table)}`;
  const sql = await destinationClient(c, network, { connectTimeoutSeconds: 10, idleTimeoutSeconds: 30 });
  const columns = source.columns;
  const names = columns.map((col) => ident(col.name)).join(', ');
  let conflict = '';
  if (source.key) {
    const keyCols = source.key.map(ident).join(', ');
    const rest = columns.filter((col) => !source.key!.includes(col.name));
    const updates = rest.map((col) => `${ident(col.name)} = excluded.${ident(col.name)}`).join(', ');
    conflict =
      exportModel(exp) !== 'events' && rest.length
        ? ` on conflict (${keyCols}) do update set ${updates}`
        : ` on conflict (${keyCols}) do nothing`;
  }
  let conn: postgres.ReservedSql | undefined;
  // Every call has a deadline. Whatever fails, the client is ended rather than rolled back on: the
  // connection may be dead (a rollback on it would never answer), and the server rolls back the
  // transaction of a connection that goes away.
  const step = <T>(work: Promise<T>) => withDeadline(work, deadlineMs, 'The destination PostgreSQL');
  const discard = () => withDeadline(sql.end({ timeout: 0 }), 5_000, 'close').catch(() => {});
  const close = async () => {
    conn?.release();
    await withDeadline(sql.end({ timeout: 5 }), 10_000, 'close').catch(() => discard());
  };
  let columnar = false;
  let direct = false;
  try {
    // Concurrent runs into one table would race on `if not exists` (PostgreSQL then reports a
    // duplicate); a transaction-scoped advisory lock on the table's name makes them take turns.
    await step(
      sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(hashtext(${target}))`;
        if (schema !== 'public') await tx.unsafe(`create schema if not exists ${ident(schema)}`);
        await tx.unsafe(
          `create table if not exists ${target} (${columns.map((col) => `${ident(col.name)} ${col.type}`).join(', ')})`,
        );
        if (source.key) {
          const index = ident(`${table}_${source.key.join('_')}_export_key`.slice(0, 63));
          await tx.unsafe(
            `create unique index if not exists ${index} on ${target} (${source.key.map(ident).join(', ')})`,
          );
        }
      }),
    );
    conn = await step(sql.reserve());
    await step(conn.unsafe('begin'));
    const types = await step(
      conn.unsafe<{ name: string; type: string }[]>(
        `select attname as name, format_type(atttypid, atttypmod) as type from pg_attribute
       where attrelid = $1::regclass and attnum > 0 and not attisdropped`,
        [target],
      ),
    );
    const typeOf = new Map(types.map((t) => [t.name, t.type]));
    columnar = source.columnar && columns.every((col) => typeOf.get(col.name) === TYPE_NAMES[col.type]);
    // COPY skips rules and cannot write into views, so only plain tables are copied into directly.
    const [plain] = await step(
      conn.unsafe<{ ok: boolean }[]>(
        `select c.relkind in ('r', 'p')
         and not exists (select 1 from pg_rewrite r where r.ev_class = c.oid and r.ev_type = '3') as ok
       from pg_class c where c.oid = $1::regclass`,
        [target],
      ),
    );
    direct = columnar && !!plain?.ok;
    await step(
      conn.unsafe(
        columnar
          ? `create temp table ${STAGE} on commit drop as select ${names} from ${target} with no data`
          : `create temp table ${STAGE} (line text) on commit drop`,
      ),
    );
  } catch (err) {
    await discard();
    throw wrap(err);
  }
  const copy = `copy pg_temp.${STAGE} ${columnar ? `(${names})` : '(line)'} from stdin`;
  let directBatches = 0;
  const copyInto = (statement: string, data: Buffer) => step(copyIn(conn!, statement, data));
  /**
   * A batch none of whose keys the table has yet (every batch of an interval exported for the first
   * time) is copied straight in, which costs a third of an upsert. The first key already there rolls
   * the batch back, and from then on the run upserts.
   */
  const tryDirect = async (batch: RecordBatch): Promise<boolean> => {
    if (!direct || directBatches >= MAX_DIRECT_BATCHES) return false;
    directBatches++;
    await step(conn!.unsafe('savepoint batch_export_direct'));
    try {
      await copyInto(`copy ${target} (${names}) from stdin`, batch.data);
    } catch (err) {
      if (sqlState(err) !== '23505') throw err;
      await step(conn!.unsafe('rollback to savepoint batch_export_direct'));
      direct = false;
    }
    await step(conn!.unsafe('release savepoint batch_export_direct'));
    return direct;
  };
  const insert = columnar
    ? `insert into ${target} (${names}) select ${names} from pg_temp.${STAGE}${conflict}`
    : `insert into ${target} (${names}) select ${columns.map((col) => `r.${ident(col.name)}`).join(', ')}
       from pg_temp.${STAGE} s cross join lateral json_populate_record(null::${target}, s.line::json) r${conflict}`;
  let bytes = 0;
  return {
    get bytes() {
      return bytes;
    },
    get format() {
      return columnar ? 'columns' : 'json';
    },
    async write(batch) {
      try {
        if (!(await tryDirect(batch))) {
          await copyInto(copy, batch.data);
          await step(conn!.unsafe(insert));
          await step(conn!.unsafe(`truncate pg_temp.${STAGE}`));
        }
      } catch (err) {
        throw wrap(err);
      }
      bytes += batch.data.length;
    },
    async finish() {
      try {
        await step(conn!.unsafe('commit'));
      } catch (err) {
        await discard();
        throw wrap(err);
      }
      await close();
    },
    async abort() {
      await discard();
    },
  };
}
