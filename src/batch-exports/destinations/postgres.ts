import postgres from 'postgres';
import { NonRetryableError, type DestinationContext, type DestinationWriter } from './types.js';

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** Errors that come from the configuration (credentials, names, privileges), not from a passing fault. */
function isConfigError(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return /^(28|3D|3F|42)/.test(code) || code === 'ENOTFOUND';
}

function wrap(err: unknown): unknown {
  if (isConfigError(err)) return new NonRetryableError(`PostgreSQL refused the export: ${(err as Error).message}`);
  return err;
}

/**
 * Inserts each batch with one statement (`json_populate_recordset`), all inside one transaction per
 * run: a failed attempt leaves nothing behind. Records with a key (`uuid` for events, `team_id` +
 * `distinct_id` for persons) are upserted on it, so re-exporting an interval never duplicates rows.
 */
export async function postgresWriter({ exp, source }: DestinationContext): Promise<DestinationWriter> {
  const c = exp.destination_config as Record<string, any>;
  const schema: string = c.schema || 'public';
  const table: string = c.table_name || (exp.model === 'persons' ? 'persons' : 'events');
  const target = `${ident(schema)}.${ident(table)}`;
  const sql = postgres({
    host: c.host,
    port: c.port ?? 5432,
    database: c.database,
    username: c.user,
    password: c.password,
    ssl: c.has_self_signed_cert ? { rejectUnauthorized: false } : 'prefer',
    max: 1,
    connect_timeout: 10,
    idle_timeout: 30,
    onnotice: () => {},
  });
  const columns = source.columns;
  const names = columns.map((col) => ident(col.name)).join(', ');
  let conflict = '';
  if (source.key) {
    const keyCols = source.key.map(ident).join(', ');
    const rest = columns.filter((col) => !source.key!.includes(col.name));
    conflict =
      exp.model === 'persons' && rest.length
        ? ` on conflict (${keyCols}) do update set ${rest.map((col) => `${ident(col.name)} = excluded.${ident(col.name)}`).join(', ')}`
        : ` on conflict (${keyCols}) do nothing`;
  }
  let conn: postgres.ReservedSql | undefined;
  try {
    // Concurrent runs into one table would race on `if not exists` (PostgreSQL then reports a
    // duplicate); a transaction-scoped advisory lock on the table's name makes them take turns.
    await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtext(${target}))`;
      if (schema !== 'public') await tx.unsafe(`create schema if not exists ${ident(schema)}`);
      await tx.unsafe(`create table if not exists ${target} (${columns.map((col) => `${ident(col.name)} ${col.type}`).join(', ')})`);
      if (source.key) {
        const index = ident(`${table}_${source.key.join('_')}_export_key`.slice(0, 63));
        await tx.unsafe(`create unique index if not exists ${index} on ${target} (${source.key.map(ident).join(', ')})`);
      }
    });
    conn = await sql.reserve();
    await conn.unsafe('begin');
  } catch (err) {
    conn?.release();
    await sql.end({ timeout: 5 }).catch(() => {});
    throw wrap(err);
  }
  const insert = `insert into ${target} (${names}) select ${names} from json_populate_recordset(null::${target}, $1::text::json)${conflict}`;
  let bytes = 0;
  const close = async () => {
    conn?.release();
    await sql.end({ timeout: 5 }).catch(() => {});
  };
  return {
    get bytes() {
      return bytes;
    },
    async write(batch) {
      const payload = `[${batch.lines.join(',')}]`;
      try {
        await conn!.unsafe(insert, [payload]);
      } catch (err) {
        throw wrap(err);
      }
      bytes += Buffer.byteLength(payload);
    },
    async finish() {
      try {
        await conn!.unsafe('commit');
      } catch (err) {
        throw wrap(err);
      } finally {
        await close();
      }
    },
    async abort() {
      await conn?.unsafe('rollback').catch(() => {});
      await close();
    },
  };
}
