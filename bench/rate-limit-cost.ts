// What throttling counted in PostgreSQL (src/http/rate-limit.ts) costs a request: the server as `npm start`
// runs it on DATABASE_URL, organization retrieve under autocannon (BENCH_CONNECTIONS, 50 by default; one
// key, so every request updates the same counter row, the worst case), with RATE_LIMITS off and on (limits
// too high to refuse), rounds alternating. `node --import tsx bench/rate-limit-cost.ts` after
// `node scripts/build.mjs dist/app`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { queryRoleName } from '../src/query/role-queries.js';

const KEY = `phx_${randomBytes(20).toString('hex')}`;
const base = process.env.DATABASE_URL;
if (!base) throw new Error('DATABASE_URL is required');
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const duration = Number(process.env.BENCH_DURATION ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

interface Round {
  rps: number;
  p50: number;
  p99: number;
  mean: number;
  errors: number;
}

async function round(limits: boolean): Promise<Round> {
  const admin = postgres(base!, { max: 1, onnotice: () => {} });
  const name = `bench_rl_${Date.now()}`;
  await admin.unsafe(`create database ${name}`);
  const u = new URL(base!);
  u.pathname = `/${name}`;
  const port = 18000 + Math.floor(Math.random() * 1000);
  const server = spawn(process.execPath, ['--heap-growing-percent=50', 'dist/app/server.mjs'], {
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: u.toString(),
      BOOTSTRAP_API_KEY: KEY,
      RATE_LIMITS: limits ? 'on' : 'off',
      RATE_LIMIT_BURST: '100000000/minute',
      RATE_LIMIT_SUSTAINED: '100000000/hour',
      LOG_LEVEL: 'warn',
      WORKER: '0',
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    },
    stdio: 'inherit',
  });
  const url = `http://127.0.0.1:${port}/api/organizations/@current/`;
  // Ready once it answers the key (migrations and the first start take a while on a busy machine).
  for (let i = 0; ; i++) {
    const ok = await fetch(url, { headers: { authorization: `Bearer ${KEY}` } }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 1800) throw new Error('the server did not start within three minutes');
    await new Promise((r) => setTimeout(r, 100));
  }
  const opts = { url, connections, headers: { authorization: `Bearer ${KEY}` } };
  await autocannon({ ...opts, duration: 2 });
  const r = await autocannon({ ...opts, duration });
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  await admin.unsafe(`drop database ${name} with (force)`);
  await admin.unsafe(`drop role if exists ${queryRoleName(name)}`);
  await admin.end();
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    mean: r.latency.average,
    errors: r.non2xx + r.errors + r.timeouts,
  };
}

console.log(`${connections} connections, ${duration} s rounds after 2 s of warm-up`);
console.log(
  '| RATE_LIMITS | round | req/s | mean ms | p50 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|---:|---:|',
);
for (let i = 1; i <= rounds; i++) {
  for (const on of [false, true]) {
    const r = await round(on);
    console.log(
      `| ${on ? 'on' : 'off'} | ${i} | ${r.rps} | ${r.mean.toFixed(2)} | ${r.p50} | ${r.p99} | ${r.errors} |`,
    );
  }
}
