import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import postgres from 'postgres';
import type { Test } from 'tap';
import { JobEngine } from '../../src/batch-exports/engine.js';
import { executeRun, type RunAttempt, type RunOutcome } from '../../src/batch-exports/runner.js';
import { ExportWorker, type WorkerOptions } from '../../src/batch-exports/worker.js';
import type { Config } from '../../src/config.js';
import type { Db } from '../../src/db/client.js';
import { tenantNetwork } from '../../src/net/index.js';
import { secretBox, type SecretBox } from '../../src/secrets/index.js';
import type { TestContext } from './app.js';
import { withDatabase } from './db.js';

/**
 * One attempt at run `runId` as a worker makes it (without the job engine), its destination allowed
 * on 127.0.0.1; `opts` changes the attempt's settings.
 */
export function attemptRun(db: Db, config: Config, runId: string, opts: Partial<RunAttempt> = {}): Promise<RunOutcome> {
  return executeRun(db, {
    runId,
    token: 'test-attempt',
    retryCount: 0,
    retryLimit: 0,
    signal: new AbortController().signal,
    batchSize: 100,
    staleSeconds: 30,
    secrets: secretBox(config),
    network: tenantNetwork(['127.0.0.0/8'], undefined),
    ...opts,
  });
}

/**
 * A worker with its own supervising job engine, tuned for tests: quick polling and retries. Start it
 * before the app queues anything, so the queues get these options. It lives until the test file ends.
 */
export async function startWorker(
  ctx: TestContext,
  opts: Partial<WorkerOptions> & { retryLimit?: number; start?: boolean; secrets?: SecretBox } = {},
): Promise<{ worker: ExportWorker; engine: JobEngine }> {
  const { database } = ctx;
  const engine = new JobEngine(database, {
    supervise: true,
    retryLimit: opts.retryLimit ?? 2,
    retryDelaySeconds: 1,
    runTimeoutSeconds: 600,
    log: (msg, err) => console.error(msg, err),
  });
  const worker = new ExportWorker(database, engine, {
    pollSeconds: 0.5,
    batchSize: 50,
    staleSeconds: 5,
    concurrency: 2,
    log: (msg, err) => console.error(msg, err),
    allowPrivateNetworks: ctx.app.config.allowPrivateNetworks,
    ...opts,
    secrets: opts.secrets ?? secretBox(ctx.app.config),
  });
  if (opts.start !== false) await worker.start();
  else await engine.boss();
  ctx.beforeClose(async () => {
    await worker.stop();
    await engine.stop();
  });
  return { worker, engine };
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface CapturedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

/**
 * An HTTP server on 127.0.0.1 that records every request body; `respond` picks the status (and may
 * delay), so a test can make the destination fail or slow.
 */
export async function captureServer(
  t: Test,
  respond: (req: CapturedRequest, n: number) => number | Promise<number> = () => 200,
): Promise<{ url: string; requests: CapturedRequest[] }> {
  const requests: CapturedRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const captured = { path: req.url ?? '', headers: req.headers, body: JSON.parse(raw.toString('utf8') || 'null') };
      const status = await respond(captured, n++);
      if (status < 300) requests.push(captured);
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: status < 300 ? 1 : 0 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/batch/`, requests };
}

const LOCAL_PG = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A fresh database to export into: on the server of DATABASE_URL when tests run on PostgreSQL, else
 * on the machine's PostgreSQL if one answers. Undefined when there is none.
 */
export async function destinationDatabase(t: Test): Promise<{ url: URL; sql: postgres.Sql } | undefined> {
  const base = process.env.DATABASE_URL ?? LOCAL_PG;
  const admin = postgres(base, { max: 1, onnotice: () => {}, connect_timeout: 3 });
  try {
    await admin`select 1`;
  } catch {
    await admin.end({ timeout: 1 }).catch(() => {});
    return undefined;
  }
  const name = `dest_${randomBytes(5).toString('hex')}`;
  await admin.unsafe(`create database ${name}`);
  const url = new URL(withDatabase(base, name));
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
  t.teardown(async () => {
    await sql.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end({ timeout: 5 });
  });
  return { url, sql };
}
