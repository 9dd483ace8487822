import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { createGzip } from 'node:zlib';
import type { Sql, TransactionSql } from 'postgres';
import { first, ident, sequences, SCHEMA, tablesInOrder } from './tables.js';
import { FORMAT, VERSION, type BackupHeader } from './format.js';

export interface DumpSummary {
  file: string;
  tables: number;
  rows: number;
  bytes: number;
}

/**
 * Writes every table of our schema, read in one REPEATABLE READ snapshot (a consistent copy while the
 * server keeps writing), to `file` as gzip: a header line, then per table a JSON line and its rows in
 * COPY's text format ending with `\.`, then the sequences. The file appears only once complete.
 */
export async function dump(sql: Sql, file: string): Promise<DumpSummary> {
  const partial = `${file}.partial`;
  const gzip = createGzip();
  const out = createWriteStream(partial, { mode: 0o600 });
  gzip.pipe(out);
  const write = async (chunk: string | Buffer) => {
    if (!gzip.write(chunk)) await once(gzip, 'drain');
  };
  let rows = 0;
  let tableCount = 0;
  try {
    await sql.begin('isolation level repeatable read read only', async (tx) => {
      const { migrations } = first(
        await tx<{ migrations: number }[]>`
        select count(*)::int as migrations from drizzle.__drizzle_migrations`,
      );
      const { server_version } = first(await tx<{ server_version: string }[]>`show server_version`);
      const header: BackupHeader = {
        format: FORMAT,
        version: VERSION,
        migrations,
        server_version,
        created_at: new Date().toISOString(),
      };
      await write(`${JSON.stringify(header)}\n`);
      for (const table of await tablesInOrder(tx)) {
        await write(`${JSON.stringify({ table: table.name, columns: table.columns })}\n`);
        const cols = table.columns.map(ident).join(', ');
        // A query, since COPY reads no partitioned table (events) by name.
        const from = `${ident(SCHEMA)}.${ident(table.name)}`;
        const copy = await tx.unsafe(`copy (select ${cols} from ${from}) to stdout`).readable();
        for await (const chunk of copy as AsyncIterable<Buffer>) {
          // COPY's text format ends every row with a newline and escapes those inside values.
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++;
          await write(chunk);
        }
        await write('\\.\n');
        tableCount++;
      }
      const values: Record<string, { value: string; called: boolean }> = {};
      for (const name of await sequences(tx)) {
        const [s] = await tx.unsafe<{ last_value: string; is_called: boolean }[]>(
          `select last_value::text, is_called from ${ident(SCHEMA)}.${ident(name)}`,
        );
        values[name] = { value: s!.last_value, called: s!.is_called };
      }
      await write(`${JSON.stringify({ sequences: values })}\n`);
    });
    gzip.end();
    await once(out, 'close');
    await rename(partial, file);
  } catch (err) {
    gzip.destroy();
    out.destroy();
    await rm(partial, { force: true });
    throw err;
  }
  return { file, tables: tableCount, rows, bytes: out.bytesWritten };
}
