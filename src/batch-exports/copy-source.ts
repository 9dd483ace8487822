import type { Readable } from 'node:stream';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { countCopyRows } from './copy-text.js';

export interface CopyBatch {
  count: number;
  /** Complete rows in COPY text format. */
  data: Buffer;
}

/** Bytes read ahead of the destination, whatever the batch size, before the source is paused. */
const MAX_AHEAD_BYTES = 32 * 1024 * 1024;

/** The postgres.js client behind a drizzle database, for COPY TO STDOUT, which drizzle cannot stream. */
export function postgresClient(db: Db): postgres.Sql {
  return (db as unknown as { $client: postgres.Sql }).$client;
}

function literal(value: unknown): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  if (typeof value === 'string') {
    if (value.includes('\0')) throw new Error('A query parameter holds a NUL character');
    const quoted = `'${value.replace(/'/g, "''")}'`;
    // The E'' form reads backslashes the same whatever standard_conforming_strings says.
    return value.includes('\\') ? `E${quoted.replace(/\\/g, '\\\\')}` : quoted;
  }
  throw new Error(`A query parameter of type ${typeof value} cannot be written as a literal`);
}

/** The query's text with its parameters written in as literals: COPY takes no parameters. */
export function inlineParams(query: { sql: string; params: unknown[] }): string {
  return query.sql.replace(/\$(\d+)/g, (_m, n: string) => literal(query.params[Number(n) - 1]));
}

/**
 * Streams the query's rows with `COPY (query) TO STDOUT` in batches of `size` rows (the last may be
 * smaller), as PostgreSQL writes them: one statement and one snapshot for the whole run, nothing
 * parsed here. The stream reads on while the caller writes a batch, up to one batch ahead, then
 * pauses the connection. Leaving early cancels the statement. Timestamps are written in ISO form in
 * UTC whatever the server's settings.
 */
export async function* copyBatches(client: postgres.Sql, query: string, size: number): AsyncGenerator<CopyBatch> {
  const conn = await client.reserve();
  let statement: postgres.PendingQuery<postgres.Row[]> | undefined;
  let stream: Readable | undefined;
  let chunks: Buffer[] = [];
  let rows = 0;
  let bytes = 0;
  let ended = false;
  let committed = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  // A batch is ready at `size` rows, or sooner when its rows are so large that they pass the byte limit.
  const full = () => rows >= size || (rows > 0 && bytes >= MAX_AHEAD_BYTES);
  try {
    await conn.unsafe('begin transaction read only');
    await conn.unsafe(`set local timezone = 'UTC'`);
    await conn.unsafe(`set local datestyle = 'ISO, YMD'`);
    statement = conn.unsafe(`copy (${query}) to stdout`);
    const s = (stream = (await statement.readable()) as unknown as Readable);
    s.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
      rows += countCopyRows(chunk).rows;
      if (full()) s.pause();
      notify();
    });
    s.on('end', () => {
      // postgres.js pauses its socket when a push finds the stream's buffer full and resumes it only
      // from the stream's read(), which a stream that has ended no longer calls: the COPY's closing
      // messages, and every later answer on this connection, would wait forever (seen as a commit
      // that never returned). Its read() is that resume.
      (s as unknown as { _read(size: number): void })._read(0);
      ended = true;
      notify();
    });
    s.on('error', (err) => {
      failure = err;
      notify();
    });
    for (;;) {
      while (failure === undefined && !ended && !full()) await new Promise<void>((resolve) => (wake = resolve));
      if (failure !== undefined) throw failure;
      if (!rows) break;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const cut = countCopyRows(all, 0, size);
      const rest = all.subarray(cut.end);
      chunks = rest.length ? [rest] : [];
      bytes = rest.length;
      rows -= cut.rows;
      if (s.isPaused() && !full()) s.resume();
      yield { count: cut.rows, data: all.subarray(0, cut.end) };
    }
    await conn.unsafe('commit');
    committed = true;
  } finally {
    if (stream && !ended && failure === undefined) {
      // Left early: stop the statement, and read what is still in flight so the connection comes back usable.
      const s = stream;
      const settled = new Promise<void>((resolve) => {
        s.once('end', resolve);
        s.once('error', () => resolve());
        s.once('close', resolve);
      });
      s.removeAllListeners('data');
      s.on('data', () => {});
      s.resume();
      await statement?.cancel();
      await settled;
    }
    if (!committed) await conn.unsafe('rollback').catch(() => {});
    conn.release();
  }
}
