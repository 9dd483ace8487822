import { constants, createReadStream } from 'node:fs';
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import type { Sql, TransactionSql } from 'postgres';
import { parseCopyRow } from './copy-text.js';
import { FORMAT, VERSION, type BackupHeader } from './format.js';
import { first, ident, SCHEMA, tablesInOrder } from './tables.js';

export class RestoreError extends Error {}

export interface LoadSummary {
  file: string;
  tables: number;
  rows: number;
}

/**
 * Loads a backup into a database that holds no data yet (only what migrations seed), in one
 * transaction: it is restored whole or not at all. The database's migrations must be at least the
 * backup's; a newer schema takes the backup's columns and fills the rest with their defaults.
 */
export async function load(sql: Sql, file: string): Promise<LoadSummary> {
  await access(file, constants.R_OK).catch(() => {
    throw new RestoreError(`cannot read ${file}`);
  });
  const gunzip = createGunzip();
  const source = createReadStream(file);
  source.on('error', (err) => gunzip.destroy(err));
  const lines = createInterface({ input: source.pipe(gunzip), crlfDelay: Infinity });
  const iterator = lines[Symbol.asyncIterator]();
  const next = async () => {
    try {
      const r = await iterator.next();
      return r.done ? undefined : (r.value as string);
    } catch {
      // zlib's checks: not gzip, cut short, or a checksum that does not match.
      throw new RestoreError('the backup file is damaged');
    }
  };
  const header = parseJson(await next()) as Partial<BackupHeader>;
  if (header.format !== FORMAT || header.version !== VERSION)
    throw new RestoreError(`${file} is not a backup of this server`);
  let rows = 0;
  let tables = 0;
  try {
    await sql.begin(async (tx) => {
      const { migrations } = first(
        await tx<{ migrations: number }[]>`
        select count(*)::int as migrations from drizzle.__drizzle_migrations`,
      );
      if (migrations < header.migrations!) {
        throw new RestoreError(
          `the backup comes from a newer version (${header.migrations} migrations, this one has ${migrations})`,
        );
      }
      const { n } = first(
        await tx<{ n: number }[]>`
        select (select count(*) from users) + (select count(*) from organizations) as n`,
      );
      if (Number(n) > 0) throw new RestoreError('restore needs an empty database: this one has users or organizations');
      const known = await tablesInOrder(tx);
      // Foreign keys can form cycles (a project's primary dashboard, a dashboard's project): they are
      // dropped for the load and added back after it, which checks every restored row against them.
      const keys = await tx<{ table: string; name: string; def: string }[]>`
        select c.relname as table, k.conname as name, pg_get_constraintdef(k.oid) as def
        from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
        where k.contype = 'f' and n.nspname = ${SCHEMA}
          -- a partition's copy of its table's key goes and comes back with the table's
          and k.conparentid = 0`;
      for (const k of keys)
        await tx.unsafe(`alter table ${ident(SCHEMA)}.${ident(k.table)} drop constraint ${ident(k.name)}`);
      // Only migration seeds are here: cleared children first, so the backup's rows take their place.
      for (const t of [...known].reverse()) await tx.unsafe(`delete from ${ident(SCHEMA)}.${ident(t.name)}`);
      const names = new Set(known.map((t) => t.name));
      const loaded = new Set<string>();
      for (let line = await next(); line !== undefined; line = await next()) {
        const section = parseJson(line) as { table?: string; columns?: string[]; sequences?: SequenceValues };
        if (section.sequences) {
          await setSequences(tx, section.sequences);
          break;
        }
        if (!section.table || !names.has(section.table))
          throw new RestoreError(`unknown table in backup: ${section.table}`);
        rows += await loadTable(tx, section.table, section.columns ?? [], next, file);
        loaded.add(section.table);
        tables++;
      }
      // A backup of a version before events were partitioned holds no event_uuids: the stored events'
      // uuids are what makes a retried event a no-op, so they are derived from the events.
      if (names.has('event_uuids') && !loaded.has('event_uuids')) {
        await tx.unsafe(`insert into ${ident(SCHEMA)}.event_uuids (project_id, uuid, "timestamp")
          select project_id, uuid, "timestamp" from ${ident(SCHEMA)}.events`);
      }
      // The hourly counts are the events': the events' insert trigger counted them as they loaded, on top of
      // the backup's own counts, so they are counted once more from the restored events.
      if (names.has('event_counts')) {
        await tx.unsafe(`delete from ${ident(SCHEMA)}.event_count_deltas`);
        await tx.unsafe(`delete from ${ident(SCHEMA)}.event_counts`);
        await tx.unsafe(`insert into ${ident(SCHEMA)}.event_counts (project_id, event, hour, n)
          select project_id, event, date_bin('1 hour', "timestamp", timestamptz '1970-01-01 00:00:00+00'), count(*)
          from ${ident(SCHEMA)}.events group by 1, 2, 3`);
      }
      for (const k of keys) {
        await tx.unsafe(`alter table ${ident(SCHEMA)}.${ident(k.table)} add constraint ${ident(k.name)} ${k.def}`);
      }
    });
  } finally {
    lines.close();
  }
  return { file, tables, rows };
}

/** Rows per INSERT: one statement's parameters stay far below PostgreSQL's limits. */
const BATCH = 1000;

/**
 * Inserts a table's rows in batches, each column sent as a text array and cast to its type by
 * PostgreSQL's own input functions, so a refused value fails its statement (and the restore) at once.
 */
async function loadTable(
  tx: TransactionSql,
  table: string,
  columns: string[],
  next: () => Promise<string | undefined>,
  file: string,
): Promise<number> {
  const types = await tx<{ name: string; type: string }[]>`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${SCHEMA} and c.relname = ${table} and a.attnum > 0 and not a.attisdropped`;
  const typeOf = new Map(types.map((t) => [t.name, t.type]));
  const missing = columns.find((c) => !typeOf.has(c));
  if (missing) throw new RestoreError(`column ${table}.${missing} of the backup is not in this version`);
  const casts = columns.map((_, i) => `$${i + 1}::text[]`).join(', ');
  const select = columns.map((c) => `u.${ident(c)}::${typeOf.get(c)}`).join(', ');
  const statement =
    `insert into ${ident(SCHEMA)}.${ident(table)} (${columns.map(ident).join(', ')}) ` +
    `select ${select} from unnest(${casts}) as u(${columns.map(ident).join(', ')})`;
  let count = 0;
  let batch: (string | null)[][] = columns.map(() => []);
  const flush = async () => {
    if (!batch[0]?.length) return;
    await tx.unsafe(statement, batch as never[]);
    batch = columns.map(() => []);
  };
  for (let line = await next(); line !== '\\.'; line = await next()) {
    if (line === undefined) throw new RestoreError(`${file} ends inside table ${table}`);
    const values = parseCopyRow(line);
    if (values.length !== columns.length) throw new RestoreError(`a row of ${table} has ${values.length} columns`);
    for (const [i, v] of values.entries()) batch[i]!.push(v);
    if (++count % BATCH === 0) await flush();
  }
  await flush();
  return count;
}

type SequenceValues = Record<string, { value: string; called: boolean }>;

async function setSequences(tx: TransactionSql, values: SequenceValues): Promise<void> {
  for (const [name, { value, called }] of Object.entries(values)) {
    await tx`select setval(${`${ident(SCHEMA)}.${ident(name)}`}::regclass, ${value}::bigint, ${called})`;
  }
}

function parseJson(line: string | undefined): unknown {
  try {
    return JSON.parse(line ?? '');
  } catch {
    throw new RestoreError('the backup file is damaged');
  }
}
