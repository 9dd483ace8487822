import type { Readable } from 'node:stream';
import type postgres from 'postgres';
import type { Db } from '../db/client.js';
import { countCopyRows } from './copy-text.js';
import { connectionGone, DeadlineError, withDeadline } from './deadline.js';

export interface CopyBatch {
  count: number;
  /** Complete rows in COPY text format. */
  data: Buffer;
}

/** The longest leaving (cancelling the statement, rolling back) may take before the connection is ended instead. */
const CLEANUP_MS = 5_000;

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
 *
 * Every step has a deadline of `deadlineMs`: a statement, and the wait for the next batch. A
 * connection that failed is not rolled back on (the server ended its transaction with it) and one
 * that stopped answering is ended from the server side, so leaving never hangs either.
 */
export async function* copyBatches(
  client: postgres.Sql,
  query: string,
  size: number,
  deadlineMs: number,
): AsyncGenerator<CopyBatch> {
  const step = <T>(work: Promise<T>, what: string) => withDeadline(work, deadlineMs, `The export's source (${what})`);
  const reserving = client.reserve();
  // A connection that comes after the deadline goes straight back.
  const conn = await step(reserving, 'a connection').catch((err) => {
    void reserving.then(
      (late) => late.release(),
      () => {},
    );
    throw err;
  });
  let pid: number | undefined;
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
    await step(conn.unsafe('begin transaction read only'), 'begin');
    const [me] = await step(conn.unsafe<{ pid: number }[]>('select pg_backend_pid() as pid'), 'begin');
    pid = me?.pid;
    await step(conn.unsafe(`set local timezone = 'UTC'`), 'set');
    await step(conn.unsafe(`set local datestyle = 'ISO, YMD'`), 'set');
    statement = conn.unsafe(`copy (${query}) to stdout`);
    const s = (stream = (await step(statement.readable(), 'copy')) as unknown as Readable);
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
      while (failure === undefined && !ended && !full()) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(() => {
            failure = new DeadlineError(`The export's source sent nothing for ${Math.round(deadlineMs / 1000)} s`);
            resolve();
          }, deadlineMs);
        });
        clearTimeout(timer);
      }
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
    await step(conn.unsafe('commit'), 'commit');
    committed = true;
  } catch (err) {
    failure ??= err;
    throw err;
  } finally {
    // The clean-up returns early from its own function: a `return` in this block would swallow the
    // error being thrown, and a failed export would end as if it had read every row.
    await (async () => {
      if (failure !== undefined) {
        await discard(client, conn, pid, failure, deadlineMs);
        return;
      }
      if (stream && !ended) {
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
        const left = Promise.all([statement?.cancel(), settled]);
        const ok = await withDeadline(left, Math.min(deadlineMs, CLEANUP_MS), 'cancel').then(
          () => true,
          () => false,
        );
        if (!ok) {
          await discard(client, conn, pid, new DeadlineError('cancel'), deadlineMs);
          return;
        }
      }
      if (!committed) {
        const ok = await withDeadline(conn.unsafe('rollback'), Math.min(deadlineMs, CLEANUP_MS), 'rollback').then(
          () => true,
          (err) => !connectionGone(err),
        );
        if (!ok) return void (await discard(client, conn, pid, new DeadlineError('rollback'), deadlineMs));
      }
      conn.release();
    })();
  }
}

/**
 * Gives up a reserved connection after a failure. One the driver already saw close is left alone (the
 * driver refuses anything more on it); one still open gets a rollback within the deadline, and if that
 * does not come back its backend is ended from another connection, so that it is neither kept
 * reserved nor handed back to the pool mid-transaction.
 */
async function discard(
  client: postgres.Sql,
  conn: postgres.ReservedSql,
  pid: number | undefined,
  failure: unknown,
  deadlineMs: number,
): Promise<void> {
  if (connectionGone(failure) && !(failure instanceof DeadlineError)) return;
  const rolledBack = await withDeadline(conn.unsafe('rollback'), Math.min(deadlineMs, CLEANUP_MS), 'rollback').then(
    () => true,
    () => false,
  );
  if (rolledBack) return conn.release();
  if (pid !== undefined) {
    await withDeadline(
      client`select pg_terminate_backend(${pid})`,
      Math.min(deadlineMs, CLEANUP_MS),
      'terminate',
    ).catch(() => {});
  }
}
