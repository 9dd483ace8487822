// `make bench-bombs` (also run by `make bench`): `/_health` latency while 4 capture decompression
// bombs (each ~200 KB inflating to 19 MiB: two multi-member gzip, two base64-gzip forms, no valid
// token) are decoded, against the same server idle in the same run. Writes bench/results-bombs.md.
//
// BENCH_SERVER=<a server bundle> measures another build (the commit before the fix, for the
// "before" column); BENCH_OUT=<file> writes elsewhere; BENCH_ROUNDS rounds of 4 bombs (default 5).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchJson, bombs, healthDuring, percentile, rssMb, sendBomb } from './bomb-payloads.js';

const SERVER = process.env.BENCH_SERVER ?? 'dist/app/server.mjs';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OUT = process.env.BENCH_OUT ?? 'bench/results-bombs.md';
const LABEL = process.env.BENCH_LABEL ?? 'this commit';

const dataDir = mkdtempSync(join(tmpdir(), 'bench-bombs-'));
// The embedded cluster runs as its own system user, which must reach the folder.
chmodSync(dataDir, 0o755);
const child = spawn(process.execPath, ['--heap-growing-percent=50', SERVER], {
  env: {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: '0',
    DATA_DIR: dataDir,
    RATE_LIMITS: 'off',
    WORKER: '0',
    LOG_LEVEL: 'info',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let out = '';
child.stdout!.on('data', (d) => (out += d));
child.stderr!.on('data', (d) => (out += d));
const base = await new Promise<string>((resolve, reject) => {
  const timer = setInterval(() => {
    const url = /listening at (http:\/\/127\.0\.0\.1:\d+)/i.exec(out)?.[1];
    if (url) {
      clearInterval(timer);
      resolve(url);
    }
  }, 50);
  child.on('exit', (code) => reject(new Error(`server exited ${code}: ${out.slice(-2000)}`)));
});
const pid = child.pid!;

const attack = bombs(batchJson('phc_not_a_real_token', 19 * 1024 * 1024));
attack.push(...attack);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Warm up: first decodes, JIT, heap.
await sendBomb(base, attack[0]!);
const idle = await healthDuring(base, pid, () => sleep(3_000), 10);
const during: number[] = [];
let peak = 0;
const statuses = new Set<number>();
const rssIdle = rssMb(pid);
for (let round = 0; round < ROUNDS; round++) {
  const r = await healthDuring(base, pid, () => Promise.all(attack.map((b) => sendBomb(base, b))), 10);
  during.push(...r.latencies);
  peak = Math.max(peak, r.peakRssMb);
  for (const res of r.result) statuses.add(res.status);
}
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
rmSync(dataDir, { recursive: true, force: true });

const row = (name: string, values: number[]) =>
  `| ${LABEL} | ${name} | ${values.length} | ${Math.round(percentile(values, 0.5))} | ` +
  `${Math.round(percentile(values, 0.99))} | ${Math.round(Math.max(...values))} |`;
const text = [
  '# /_health while capture bombs are decoded',
  '',
  `${new Date().toISOString()} on ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ` +
    `${process.version}. ${ROUNDS} rounds of 4 bombs sent at once (2 multi-member gzip, 2 base64-gzip ` +
    `forms, ${attack.map((b) => Math.round(Buffer.byteLength(b.body) / 1024)).join('/')} KB, each inflating to ` +
    `19 MiB of JSON, no valid token: answered ${[...statuses].join(', ')}); \`/_health\` asked every 10 ms from ` +
    'another process. Baseline: the same server idle, in the same run.',
  '',
  '| server | load | /_health answers | p50 ms | p99 ms | max ms |',
  '|---|---|---:|---:|---:|---:|',
  row('idle (baseline)', idle.latencies),
  row('4 bombs at once', during),
  '',
  `Server RSS: ${rssIdle} MB idle after warm-up, ${peak} MB at most during the bombs.`,
  '',
].join('\n');
writeFileSync(OUT, text);
process.stdout.write(text);
