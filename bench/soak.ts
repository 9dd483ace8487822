// `make soak`: a bounded mixed read/write load against a server started here (embedded database, or
// PostgreSQL when DATABASE_URL is set: a fresh database of its own, dropped afterwards). Prints
// errors, req/s and the server's RSS at start, the 10 s mark, the middle and the end; exits non-zero
// on any error or when RSS grows more than 50% from the 10 s mark to the end.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { queryRoleName } from '../src/query/role-queries.js';

const DURATION = Number(process.env.SOAK_DURATION ?? 60);
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 16);
const KEY = 'phx_soakkey00000000000000000000000000000000000000';
const MAX_GROWTH = 1.5;

const rssMb = (pid: number) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let databaseUrl = '';
let dataDir = '';
let admin: postgres.Sql | undefined;
const dbName = `soak_${Date.now()}`;
if (process.env.DATABASE_URL) {
  admin = postgres(process.env.DATABASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  const u = new URL(process.env.DATABASE_URL);
  u.pathname = `/${dbName}`;
  databaseUrl = u.toString();
} else {
  dataDir = mkdtempSync(join(tmpdir(), 'soak-data-'));
  // As root the cluster runs as `postgres`, which must be able to enter the folder.
  chmodSync(dataDir, 0o755);
}

const port = 19000 + Math.floor(Math.random() * 1000);
const base = `http://127.0.0.1:${port}`;
// The server as `npm start` runs it (the bundle `make bench` builds): one process, so its memory is the server's.
const server = spawn(process.execPath, ['--heap-growing-percent=50', '--enable-source-maps', 'dist/app/server.mjs'], {
  env: {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    BOOTSTRAP_API_KEY: KEY,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
  },
  stdio: 'inherit',
});

async function cleanup(): Promise<void> {
  if (server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
  }
  if (admin) {
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.unsafe(`drop role if exists ${queryRoleName(dbName)}`);
    await admin.end();
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

let failed = false;
try {
  for (
    let i = 0;
    !(await fetch(`${base}/_health`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 600 || server.exitCode !== null) throw new Error('the server did not start');
    await sleep(100);
  }
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const me = (await (await fetch(`${base}/api/users/@me/`, { headers })).json()) as {
    organization: { id: string };
    team: { id: number };
  };
  const dashboards = `/api/projects/${me.team.id}/dashboards/`;

  // Each connection cycles through: create a dashboard, rename it, read it, list, read the
  // organization and the caller. Half the requests write.
  type Ctx = { id?: number };
  const requests = [
    {
      method: 'POST',
      path: dashboards,
      body: JSON.stringify({ name: 'soak', tags: ['soak'], description: 'made by make soak' }),
      onResponse: (_status: number, body: string, ctx: Ctx) => {
        ctx.id = (JSON.parse(body) as { id: number }).id;
      },
    },
    {
      method: 'PATCH',
      setupRequest: (req: Record<string, unknown>, ctx: Ctx) => ({ ...req, path: `${dashboards}${ctx.id}/` }),
      body: JSON.stringify({ name: 'soak renamed', pinned: true }),
    },
    {
      method: 'GET',
      setupRequest: (req: Record<string, unknown>, ctx: Ctx) => ({ ...req, path: `${dashboards}${ctx.id}/` }),
    },
    { method: 'GET', path: `${dashboards}?limit=20` },
    { method: 'GET', path: `/api/organizations/${me.organization.id}/` },
    { method: 'GET', path: '/api/users/@me/' },
  ];

  const marks: { at: string; rss: number }[] = [{ at: 'start', rss: rssMb(server.pid!) }];
  const tenMark = Math.min(10, DURATION / 3);
  const sampler = (async () => {
    await sleep(tenMark * 1000);
    marks.push({ at: `${tenMark} s`, rss: rssMb(server.pid!) });
    await sleep((DURATION / 2 - tenMark) * 1000);
    marks.push({ at: 'middle', rss: rssMb(server.pid!) });
  })();
  process.stdout.write(
    `soak: ${DURATION} s, ${CONNECTIONS} connections, ${databaseUrl ? 'PostgreSQL' : 'embedded database'}\n`,
  );
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: DURATION,
    headers,
    requests: requests as autocannon.Request[],
  });
  await sampler;
  marks.push({ at: 'end', rss: rssMb(server.pid!) });

  const errors = result.errors + result.timeouts + result.non2xx;
  const growth = marks[3]!.rss / marks[1]!.rss;
  process.stdout.write(
    [
      `requests: ${result.requests.total} (${Math.round(result.requests.average)} req/s), latency p50 ` +
        `${result.latency.p50} ms, p99 ${result.latency.p99} ms`,
      `errors: ${errors} (connection errors ${result.errors}, timeouts ${result.timeouts}, non-2xx ${result.non2xx})`,
      `RSS MB: ${marks.map((m) => `${m.at} ${m.rss}`).join(', ')} ` +
        `(x${growth.toFixed(2)} from the ${tenMark} s mark to the end)`,
      '',
    ].join('\n'),
  );
  if (errors > 0) {
    process.stdout.write('soak failed: there were errors\n');
    failed = true;
  }
  if (growth > MAX_GROWTH) {
    process.stdout.write(`soak failed: RSS grew more than ${Math.round((MAX_GROWTH - 1) * 100)}%\n`);
    failed = true;
  }
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);
