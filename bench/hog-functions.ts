// Hog functions under load (issue #31), on the server `npm start` runs against DATABASE_URL: ingestion
// events/s through `/batch/` (100 events per request, 50 connections) with 0, 1 and 3 transformations, then
// a webhook destination fed 1,000 events/s for 10 s: deliveries/s to a local HTTP sink and the lag from the
// capture request to the delivery (p50/p99). Writes bench/results-hog-functions.md.
// Run: `npm run -s build && DATABASE_URL=postgres://... npx tsx bench/hog-functions.ts`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import autocannon from 'autocannon';
import { sqlClient } from './processes.js';
import { queryRoleName } from '../src/query/role-queries.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second. */
const CLOCK_TICKS = 100;
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is required');
const dbName = `bench_hog_${Date.now()}`;
const admin = sqlClient(url);
await admin.unsafe(`create database ${dbName}`);
const dbUrl = new URL(url);
dbUrl.pathname = `/${dbName}`;
const KEY = `phx_${randomBytes(20).toString('hex')}`;
const server = spawn(process.execPath, ['--heap-growing-percent=50', 'dist/app/server.mjs'], {
  env: {
    ...process.env,
    DATABASE_URL: dbUrl.toString(),
    BOOTSTRAP_API_KEY: KEY,
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
    RATE_LIMITS: 'off',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
// The log is read until the address is in it, then drained unread (a full pipe would stall the server).
const base = await new Promise<string>((resolve) => {
  let out: string | undefined = '';
  server.stdout!.on('data', (d) => {
    if (out === undefined) return;
    out += d;
    const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/i.exec(out);
    if (m) {
      out = undefined;
      resolve(m[1]!);
    }
  });
});
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
const api = async (path: string, method = 'GET', body?: unknown) => {
  const res = await fetch(`${base}/api/projects/@current/${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
};
const { api_token: token } = await api('');

const batchBody = (n: number, sentAt = 0) =>
  JSON.stringify({
    api_key: token,
    batch: Array.from({ length: n }, (_, i) => ({
      event: '$pageview',
      distinct_id: `user-${i % 50}`,
      properties: { $current_url: `https://example.com/${i}`, plan: 'pro', sent_ms: sentAt },
    })),
  });

/**
 * The server's CPU time (user + system, all its threads) in ms, from /proc: per event it is what each
 * transformation adds whatever else runs on the shared machine, where events/s move with its load.
 */
const serverCpuMs = () => {
  const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
};

async function ingestRate(): Promise<{ eventsPerSecond: number; p99: number; errors: number; cpuUs: number }> {
  const body = batchBody(100);
  const opts = { url: `${base}/batch/`, method: 'POST' as const, headers, body, connections: 50 };
  await autocannon({ ...opts, duration: 2 });
  const cpuBefore = serverCpuMs();
  const r = await autocannon({ ...opts, duration: SECONDS });
  const events = r.requests.total * 100;
  return {
    eventsPerSecond: Math.round(r.requests.average * 100),
    p99: r.latency.p99,
    errors: r.errors + r.non2xx,
    cpuUs: Math.round(((serverCpuMs() - cpuBefore) * 1000) / Math.max(1, events)),
  };
}

// The template's program as stored runs as plain code (src/hog-functions/native.ts); `own` makes it a program of
// the user's own, the same one behind a line that changes its bytecode, which runs on PostHog's VM.
const template = (await api('hog_function_templates/template-set-properties/')) as { code: string };
const transformation = (n: number, own = false) =>
  api('hog_functions/', 'POST', {
    type: 'transformation',
    enabled: true,
    template_id: 'template-set-properties',
    ...(own ? { hog: `let unused := 1\n${template.code}` } : {}),
    inputs: { properties: { value: { [`t${n}`]: 'yes' } } },
  });
const deleteTransformations = async () => {
  for (const f of (await api('hog_functions/?type=transformation')).results as { id: string }[]) {
    await api(`hog_functions/${f.id}/`, 'PATCH', { deleted: true });
  }
};

type IngestRow = {
  transformations: number;
  own?: boolean;
  eventsPerSecond: number;
  p99: number;
  errors: number;
  cpuUs: number;
};
const ingest: IngestRow[] = [];
// A fresh server runs its first seconds slower (compilation, pool, caches): 5 s of load before the first
// measurement, and the rate without transformations measured first and last, the cost taken against their mean.
await autocannon({
  url: `${base}/batch/`,
  method: 'POST',
  headers,
  body: batchBody(100),
  connections: 50,
  duration: 5,
});
ingest.push({ transformations: 0, ...(await ingestRate()) });
await transformation(1);
ingest.push({ transformations: 1, ...(await ingestRate()) });
await transformation(2);
await transformation(3);
ingest.push({ transformations: 3, ...(await ingestRate()) });
await deleteTransformations();
await transformation(1, true);
ingest.push({ transformations: 1, own: true, ...(await ingestRate()) });
await deleteTransformations();
ingest.push({ transformations: 0, ...(await ingestRate()) });
const none = ingest.filter((r) => r.transformations === 0);
const baseline = none.reduce((sum, r) => sum + r.eventsPerSecond, 0) / none.length;

// The destination: 1,000 events/s for SECONDS seconds, each carrying when its request was sent.
const lags: number[] = [];
let delivered = 0;
let lastAt = 0;
const sink = http.createServer((req, res) => {
  let text = '';
  req.on('data', (d) => (text += d));
  req.on('end', () => {
    const sent = Number((JSON.parse(text) as { sent_ms?: number }).sent_ms);
    lastAt = Date.now();
    lags.push(lastAt - sent);
    delivered++;
    res.writeHead(200).end('{}');
  });
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
await api('hog_functions/', 'POST', {
  type: 'destination',
  enabled: true,
  template_id: 'template-webhook',
  inputs: {
    url: { value: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook` },
    body: { value: { sent_ms: '{event.properties.sent_ms}' } },
  },
});
const total = 1000 * SECONDS;
const started = Date.now();
for (let s = 0; s < SECONDS; s++) {
  const tick = started + s * 1000;
  await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, Math.max(0, tick + i * 100 - Date.now())));
      const res = await fetch(`${base}/batch/`, { method: 'POST', headers, body: batchBody(100, Date.now()) });
      await res.arrayBuffer();
    }),
  );
}
const drainDeadline = Date.now() + 300_000;
while (delivered < total && Date.now() < drainDeadline) await new Promise((r) => setTimeout(r, 200));
const pct = (p: number) => {
  const sorted = [...lags].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
};
const destination = {
  sent: total,
  delivered,
  deliveriesPerSecond: Math.round(delivered / ((lastAt - started) / 1000)),
  lagP50: pct(0.5),
  lagP99: pct(0.99),
};

server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
sink.close();
await admin.unsafe(`drop database if exists ${dbName} with (force)`);
await admin.unsafe(`drop role if exists ${queryRoleName(dbName)}`);
await admin.end();

const costOf = (row: IngestRow) => Math.round((1 - row.eventsPerSecond / baseline) * 100);
const lines = [
  '# Hog functions benchmark (issue #31)',
  '',
  `${new Date().toISOString()} on ${os.cpus().length} cores (${os.cpus()[0]?.model}), Node ${process.version}, ` +
    `PostgreSQL at DATABASE_URL; the server as \`npm start\` runs it; ${SECONDS} s per measurement after 2 s; ` +
    `load average ${os.loadavg()[0]?.toFixed(1)} at the end.`,
  ...(process.env.BENCH_NOTE ? ['', process.env.BENCH_NOTE] : []),
  '',
  '## Ingestion with transformations (`/batch/`, 100 events per request, 50 connections)',
  '',
  '`template-set-properties` as stored, and (own program) the same program changed by one line, run on the VM;',
  'in the order of the rows, the cost against the mean of the two runs without transformations.',
  '',
  '| transformations | events/s | p99 ms | errors | cost against none | cost per transformation | ' +
    'server CPU µs/event |',
  '| --------------: | -------: | -----: | -----: | ----------------: | ----------------------: | ' +
    '------------------: |',
  ...ingest.map(
    (r) =>
      `| ${r.transformations}${r.own ? ' (own program)' : ''} | ${r.eventsPerSecond} | ${r.p99} | ${r.errors} | ` +
      `${r.transformations ? `${costOf(r)}%` : ''} | ` +
      `${r.transformations ? `${Math.round(costOf(r) / r.transformations)}%` : ''} | ${r.cpuUs} |`,
  ),
  '',
  `## A webhook destination fed 1,000 events/s for ${SECONDS} s`,
  '',
  '| events sent | delivered | deliveries/s | lag p50 ms | lag p99 ms |',
  '| ----------: | --------: | -----------: | ---------: | ---------: |',
  `| ${destination.sent} | ${destination.delivered} | ${destination.deliveriesPerSecond} | ` +
    `${destination.lagP50} | ${destination.lagP99} |`,
  '',
];
writeFileSync('bench/results-hog-functions.md', lines.join('\n'));
process.stdout.write(lines.join('\n'));
