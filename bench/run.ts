// `make bench`: drives the API and two same-run baselines with autocannon and writes bench/results.md.
// Speed is measured here and only here; tests never time anything.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type postgres from 'postgres';
import { clusterUrl } from '../src/db/embedded.js';
import { bigBatchHealth } from './big-batch.js';
import {
  cacheFigures,
  emptyCache,
  INSIGHTS,
  loadOnce,
  seedInsightDashboard,
  type CacheFigures,
} from './insight-dashboard.js';
import { FAIRNESS_HEADER, fairnessRows, queryFairness, type FairnessResult } from './query-fairness.js';
import { postgresMemory, rssMbOf, sqlClient } from './processes.js';
import { scenarios, type Scenario, type Seeded } from './scenarios.js';
import { startupTimes } from './startup.js';
import { queryRoleName } from '../src/query/role-queries.js';

// BENCH_DURATION=2 BENCH_EVENTS=20000 gives a quick run that only shows the benchmark works.
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** Rounds of each read measured against the hand-written server (issue #16: at least three). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_BARE=1 adds the older baselines: a fixed JSON body, and the API's own SQL run directly. */
const BARE = process.env.BENCH_BARE === '1';
const nameOf = (s: Scenario) => s.name.replace('1M events', `${EVENTS.toLocaleString('en')} events`);
const KEY = 'phx_benchmarkkey0000000000000000000000000000000000';
const tsx = join('node_modules', '.bin', 'tsx');

interface Row {
  itemsPerSecond?: number;
  backend: string;
  scenario: string;
  target: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  rssMb?: number;
  ratio?: string;
}

function start(args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(tsx, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const onData = (d: Buffer) => {
      out += d;
      if (ready.test(out)) resolve(child);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out.slice(-2000)}`)));
  });
}

/** Peak resident memory of a process, sampled while it works. */
function rssSampler(pid: number) {
  let peak = 0;
  const read = () => {
    try {
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      peak = Math.max(peak, kb);
    } catch {}
  };
  const timer = setInterval(read, 200);
  return {
    reset: () => {
      peak = 0;
    },
    peakMb: () => (read(), Math.round(peak / 1024)),
    nowMb: () => rssMbOf(pid),
    stop: () => clearInterval(timer),
  };
}

async function drive(
  url: string,
  scenario: Scenario,
  seeded: Seeded,
  connections = scenario.connections ?? CONNECTIONS,
  warmUpSeconds = 2,
): Promise<Omit<Row, 'backend' | 'scenario' | 'target'>> {
  const request = scenario.request(seeded);
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...request.headers };
  const opts = {
    url,
    connections,
    duration: DURATION,
    method: request.method ?? 'GET',
    headers,
    body: request.body,
    ...(request.setupRequest
      ? {
          requests: [
            { method: request.method ?? 'GET', headers, body: request.body, setupRequest: request.setupRequest },
          ],
        }
      : {}),
  } as autocannon.Options;
  if (warmUpSeconds) await autocannon({ ...opts, duration: warmUpSeconds });
  const r = await autocannon(opts);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

type BackendName = 'embedded' | 'postgresql';

/** A running API server on one backend, with its hand-written (and, with BENCH_BARE, bare) baselines beside it. */
interface Backend {
  name: BackendName;
  base: string;
  hbase: string;
  bbase: string;
  seeded: Seeded;
  sqlUrl: string;
  rss: ReturnType<typeof rssSampler>;
  /** PostgreSQL's memory after the last read scenario. */
  pgMemory: Awaited<ReturnType<typeof postgresMemory>>;
  stop(): Promise<void>;
}

async function startBackend(name: BackendName): Promise<Backend> {
  const port = 18000 + Math.floor(Math.random() * 1000);
  let databaseUrl: string | undefined;
  let dataDir: string | undefined;
  let admin: postgres.Sql | undefined;
  const dbName = `bench_${Date.now()}`;
  if (name === 'postgresql') {
    admin = sqlClient(process.env.DATABASE_URL!);
    await admin.unsafe(`create database ${dbName}`);
    const u = new URL(process.env.DATABASE_URL!);
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'bench-data-'));
    // As root the cluster runs as `postgres`, which must be able to enter the folder.
    chmodSync(dataDir, 0o755);
  }
  // The database the server uses, for seeding and the baselines: on the embedded backend its own
  // cluster, reached beside it through the socket.
  const sqlUrl = databaseUrl ?? clusterUrl(dataDir!);
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    BOOTSTRAP_API_KEY: KEY,
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'warn',
    WORKER: '0',
    DATABASE_URL: databaseUrl ?? '',
    DATA_DIR: dataDir ?? '',
    // A key of the run's own: without it a server on DATABASE_URL writes one into the checkout's .data/.
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  // The server as `npm start` runs it (the bundle `make bench` builds): one process, so its memory is the server's.
  // BENCH_PROFILE=<folder> writes the server's CPU profile there when it stops (read its top self times).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // --heap-growing-percent as in package.json's start script (README.md, "npm start", says why).
  const node = ['--heap-growing-percent=50', '--enable-source-maps'];
  const server = spawn(process.execPath, [...profile, ...node, 'dist/app/server.mjs'], {
    env: { ...process.env, ...env },
    stdio: 'inherit',
  });
  const children: ChildProcess[] = [];
  const rss = rssSampler(server.pid!);
  const stop = async () => {
    rss.stop();
    for (const child of children) child.kill();
    // The server stops its embedded cluster on the way out: its folder goes only once it has.
    const exited = new Promise((r) => server.once('exit', r));
    if (server.exitCode === null) server.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
    if (admin) {
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
      await admin.unsafe(`drop role if exists ${queryRoleName(dbName)}`);
      await admin.end();
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const base = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      const up = await fetch(`${base}/_health`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 600 || server.exitCode !== null) throw new Error('the server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const seeded = await seed(base, sqlUrl);
    const fixtures: Record<string, unknown> = {};
    for (const s of scenarios) {
      const r = s.request(seeded);
      const res = await fetch(base + r.path, {
        method: r.method ?? 'GET',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: r.body,
      });
      fixtures[s.id] = await res.json();
    }
    const bport = port + 1;
    const fixturesFile = join(tmpdir(), `bench-fixtures-${port}.json`);
    writeFileSync(fixturesFile, JSON.stringify(fixtures));
    if (BARE) children.push(await start(['bench/baseline.ts', String(bport), sqlUrl, fixturesFile], {}, /ready/));
    children.push(await start(['bench/handwritten.ts', String(port + 2), sqlUrl], {}, /ready/));
    return {
      name,
      base,
      hbase: `http://127.0.0.1:${port + 2}`,
      bbase: `http://127.0.0.1:${bport}`,
      seeded,
      sqlUrl,
      rss,
      pgMemory: await postgresMemory(sqlUrl),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * The backends in the order of a turn: the first turn as given, the next reversed, and so on, so that
 * over two turns each backend is measured first once and a machine that drifts favours neither.
 */
const turnOrder = <T>(items: T[], turn: number): T[] => (turn % 2 ? [...items].reverse() : items);

/** A scenario without a hand-written counterpart: each backend twice, in the order A B B A when there are two. */
async function measure(backends: Backend[], s: Scenario): Promise<void> {
  const passes = backends.length > 1 ? 2 : 1;
  for (let pass = 0; pass < passes; pass++) {
    for (const b of turnOrder(backends, pass)) {
      b.rss.reset();
      const ours = await drive(b.base + s.request(b.seeded).path, s, b.seeded);
      if (!s.itemsPerRequest) b.pgMemory = await postgresMemory(b.sqlUrl);
      const target = passes > 1 ? `api, pass ${pass + 1}` : 'api';
      const row: Row = { backend: b.name, scenario: nameOf(s), target, ...ours, rssMb: b.rss.peakMb() };
      if (s.itemsPerRequest) row.itemsPerSecond = ours.rps * s.itemsPerRequest;
      rows.push(row);
      if (BARE && pass === 0) await bare(b, s, row);
      if (s.pageLatency && pass === 0) {
        const single = await drive(b.base + s.request(b.seeded).path, s, b.seeded, 1);
        rows.push({ backend: b.name, scenario: nameOf(s), target: 'api, 1 connection', ...single });
        process.stdout.write(`${b.name} ${nameOf(s)}, 1 connection: p50 ${single.p50} ms p99 ${single.p99} ms\n`);
      }
      const items = row.itemsPerSecond ? `, ${row.itemsPerSecond} events/s` : '';
      process.stdout.write(
        `${b.name} ${nameOf(s)} (${target}): ${ours.rps} req/s${items} p50 ${ours.p50} ms p99 ${ours.p99} ms, ` +
          `${ours.errors} errors (${row.ratio ?? ''})\n`,
      );
    }
  }
}

/** BENCH_BARE's baselines: the same JSON from a bare route, and the API's SQL run directly. */
async function bare(b: Backend, s: Scenario, row: Row): Promise<void> {
  const json = await drive(
    `${b.bbase}/json/${s.id}`,
    { ...s, request: () => ({ ...s.request(b.seeded), path: '' }) },
    b.seeded,
  );
  rows.push({ backend: b.name, scenario: nameOf(s), target: 'bare fastify, same JSON', ...json });
  row.ratio = `${((row.rps / json.rps) * 100).toFixed(0)}% of bare`;
  const sqlPath = s.baselineSql?.(b.seeded);
  if (sqlPath) {
    const sql = await drive(b.bbase + sqlPath, { ...s, request: () => ({ path: '' }) }, b.seeded);
    rows.push({ backend: b.name, scenario: nameOf(s), target: 'bare fastify + same SQL', ...sql });
    row.ratio += `, ${((row.rps / sql.rps) * 100).toFixed(0)}% of bare+SQL`;
  }
}

interface InsightDashboardRun {
  backend: string;
  firstLoads: { refresh: string; ms: number }[];
  /** Mean req/s of the cached insight dashboard, of the text one, and of `refresh=blocking` on a fresh cache. */
  cachedRps: number;
  textRps: number;
  blockingRps: number;
  cache: CacheFigures;
}
const insightRuns: InsightDashboardRun[] = [];
const INSIGHT_SCENARIO = `dashboard of ${INSIGHTS.length} insight tiles, ${EVENTS.toLocaleString('en')} events`;
const TEXT_SCENARIO = 'dashboard retrieve (20 text tiles), same run';

/**
 * Issue #30: the first load of a dashboard of 10 insight tiles (each tile computed: `refresh=blocking`
 * on a cold cache, then twice `force_blocking`), then its cached load (a plain read) against the
 * 20-text-tile dashboard's retrieve, in turns (A B B A) on each backend, and the cache's figures.
 */
async function insightDashboard(backends: Backend[]): Promise<void> {
  for (const b of backends) {
    const path = `/api/projects/${b.seeded.projectId}/dashboards/${b.seeded.insightDashboardId}/`;
    const textPath = `/api/projects/${b.seeded.projectId}/dashboards/${b.seeded.dashboardId}/`;
    const firstLoads: InsightDashboardRun['firstLoads'] = [];
    await emptyCache(b.sqlUrl, b.seeded.projectId);
    const first = await loadOnce(b.base, KEY, path, 'blocking');
    const warm = first.tiles.filter((t) => t.is_cached).map((t) => t.name);
    if (warm.length) throw new Error(`the first load found cached results: ${warm.join(', ')}`);
    firstLoads.push({ refresh: 'blocking, cold cache', ms: first.ms });
    for (let i = 0; i < 2; i++)
      firstLoads.push({ refresh: 'force_blocking', ms: (await loadOnce(b.base, KEY, path, 'force_blocking')).ms });
    const cached = await loadOnce(b.base, KEY, path);
    if (cached.tiles.some((t) => !t.is_cached)) throw new Error('a plain read after the first load computed');
    // The stored answer is jsonb, which orders an object's keys its own way: compared as values.
    const last = await loadOnce(b.base, KEY, path, 'force_blocking');
    const again = await loadOnce(b.base, KEY, path);
    for (const [i, tile] of again.tiles.entries()) {
      const difference = firstDifference(tile.result, last.tiles[i]!.result);
      if (difference)
        throw new Error(`${tile.name}: the cached load answers otherwise than the computed one: ${difference}`);
    }
    process.stdout.write(
      `${b.name} ${INSIGHT_SCENARIO} first loads: ${firstLoads.map((f) => `${f.ms} ms`).join(', ')}\n`,
    );
    const targets = [
      { name: 'text', scenario: TEXT_SCENARIO, target: 'api', url: b.base + textPath },
      { name: 'cached', scenario: INSIGHT_SCENARIO, target: 'api, cached load', url: b.base + path },
      {
        name: 'blocking',
        scenario: INSIGHT_SCENARIO,
        target: 'api, refresh=blocking (fresh)',
        url: `${b.base + path}?refresh=blocking`,
      },
    ];
    const rps: Record<string, number[]> = { text: [], cached: [], blocking: [] };
    for (let pass = 0; pass < 2; pass++) {
      for (const t of turnOrder(targets, pass)) {
        b.rss.reset();
        const scenario: Scenario = { id: t.name, name: t.scenario, request: () => ({ path: '' }) };
        const r = await drive(t.url, scenario, b.seeded);
        rps[t.name]!.push(r.rps);
        rows.push({
          backend: b.name,
          scenario: t.scenario,
          target: `${t.target}, pass ${pass + 1}`,
          ...r,
          rssMb: b.rss.peakMb(),
        });
        process.stdout.write(
          `${b.name} ${t.scenario} (${t.target}, pass ${pass + 1}): ${r.rps} req/s p50 ${r.p50} ms ` +
            `p99 ${r.p99} ms, ${r.errors} errors\n`,
        );
      }
    }
    const mean = (xs: number[]) => Math.round(xs.reduce((n, x) => n + x, 0) / xs.length);
    // Hits are counted in each process and written every few seconds: wait for the last ones.
    await new Promise((r) => setTimeout(r, 6_000));
    const cache = await cacheFigures(b.sqlUrl, b.seeded.projectId);
    insightRuns.push({
      backend: b.name,
      firstLoads,
      cachedRps: mean(rps.cached!),
      textRps: mean(rps.text!),
      blockingRps: mean(rps.blocking!),
      cache,
    });
  }
}

async function benchAll(names: BackendName[]): Promise<void> {
  const backends: Backend[] = [];
  try {
    for (const name of names) backends.push(await startBackend(name));
    let readsDone = false;
    const afterReads = () => {
      if (readsDone) return;
      readsDone = true;
      for (const b of backends) {
        rows.push({
          backend: b.name,
          scenario: 'after the read scenarios',
          target: 'api RSS now',
          rps: 0,
          p50: 0,
          p99: 0,
          errors: 0,
          rssMb: b.rss.nowMb(),
        });
        memory.push({ backend: b.name, apiMb: b.rss.nowMb(), pg: b.pgMemory });
      }
    };
    for (const s of scenarios) {
      if (s.itemsPerRequest) afterReads();
      if (process.env.BENCH_SCENARIOS && !process.env.BENCH_SCENARIOS.split(',').includes(s.id)) continue;
      if (s.handwritten) await rounds(backends, s);
      else await measure(backends, s);
      // A scenario that wrote leaves work for autovacuum, which would then run during the next
      // scenarios of one backend and not the other (a server may have it off): settle both now.
      if (s.request(backends[0]!.seeded).method) await Promise.all(backends.map((b) => settle(b.sqlUrl)));
    }
    afterReads();
    if (wants('dashboard_insights')) await insightDashboard(backends);
    for (const b of backends) {
      if (!wants('query_fairness')) break;
      const result = await queryFairness(b.base, KEY, b.seeded.projectId);
      fairness.push({ backend: b.name, result });
      process.stdout.write(`${fairnessRows(b.name, 'this commit', result).join('\n')}\n`);
    }
    for (const b of backends) {
      if (!wants('big_batch')) break;
      const big = await bigBatchHealth(b.base, b.seeded.apiToken);
      bigBatches.push({ backend: b.name, ...big });
      process.stdout.write(
        `${b.name} ${big.mb} MB /batch/ (${big.events} events): ${big.status} in ${big.ingestMs} ms; /_health at ` +
          `most ${big.healthMaxMs} ms over ${big.healthChecks} checks\n`,
      );
    }
  } finally {
    for (const b of backends) await b.stop();
  }
}

interface Round {
  backend: string;
  scenario: string;
  round: number;
  ours: Omit<Row, 'backend' | 'scenario' | 'target'>;
  hand: Omit<Row, 'backend' | 'scenario' | 'target'>;
  /** Bytes of each server's answer, to show the two answer alike. */
  oursBytes: number;
  handBytes: number;
}
const roundRows: Round[] = [];

/**
 * Issue #16: a read measured in rounds against the hand-written server under the same load, so that
 * a slowdown between rounds of the same load shows. Each round measures every backend in turn (the
 * order reversed every other round), and within a backend the API and the hand-written server one
 * after the other, the API first in odd rounds and second in even ones.
 */
async function rounds(backends: Backend[], s: Scenario): Promise<void> {
  const headers = { authorization: `Bearer ${KEY}` };
  const answer = async (b: string, path: string) => {
    const res = await fetch(b + path, { headers });
    if (res.status !== 200) throw new Error(`${b}${path}: ${res.status} ${await res.text()}`);
    return res.text();
  };
  const bytes = new Map<Backend, [number, number]>();
  for (const b of backends) {
    const path = s.request(b.seeded).path;
    // One after the other: the API's dashboard retrieve records the read in last_accessed_at, which the
    // hand-written server's answer then shows too.
    const ours = await answer(b.base, path);
    const hand = await answer(b.hbase, path);
    // The baseline is only fair if it does the same work: the same answer, field for field.
    sameAnswer(s.id, normalised(JSON.parse(ours), b.base), normalised(JSON.parse(hand), b.hbase));
    bytes.set(b, [Buffer.byteLength(ours), Buffer.byteLength(hand)]);
  }
  for (let round = 1; round <= ROUNDS; round++) {
    for (const b of turnOrder(backends, round - 1)) {
      const path = s.request(b.seeded).path;
      // Round 1 follows a whole round's worth of unmeasured load: two idle cores run faster for their
      // first seconds of full load (a busy-loop on both slows by about 8% after ten seconds), so a
      // short warm-up would flatter round 1 and make the later rounds look like a slowdown.
      const run = (url: string) => drive(url + path, s, b.seeded, undefined, round === 1 ? DURATION : 0);
      let ours: Awaited<ReturnType<typeof drive>>;
      let hand: Awaited<ReturnType<typeof drive>>;
      if (round % 2) {
        ours = await run(b.base);
        hand = await run(b.hbase);
      } else {
        hand = await run(b.hbase);
        ours = await run(b.base);
      }
      b.pgMemory = await postgresMemory(b.sqlUrl);
      const [oursBytes, handBytes] = bytes.get(b)!;
      roundRows.push({ backend: b.name, scenario: nameOf(s), round, ours, hand, oursBytes, handBytes });
      rows.push({
        backend: b.name,
        scenario: nameOf(s),
        target: `api, round ${round}`,
        ...ours,
        ratio: `${((ours.rps / hand.rps) * 100).toFixed(0)}% of hand-written`,
      });
      rows.push({ backend: b.name, scenario: nameOf(s), target: `hand-written, round ${round}`, ...hand });
      process.stdout.write(
        `${b.name} ${nameOf(s)} round ${round}: ${ours.rps} req/s p99 ${ours.p99} ms; hand-written ${hand.rps} ` +
          `req/s p99 ${hand.p99} ms (${((ours.rps / hand.rps) * 100).toFixed(0)}%), ` +
          `${ours.errors + hand.errors} errors\n`,
      );
    }
  }
}

/** Where two parsed answers first differ (a path and both values), or undefined when they are deep-equal. */
function firstDifference(a: unknown, b: unknown, at = '$'): string | undefined {
  if (a === b) return undefined;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    for (const k of new Set([...ka, ...kb])) {
      if (!(k in a) || !(k in b)) return `${at}.${k}: ${k in a ? 'only in the API' : 'only in the hand-written'}`;
      const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  return `${at}: API ${JSON.stringify(a)}, hand-written ${JSON.stringify(b)}`;
}

/**
 * A page's `next` and `previous` links name the server that wrote them, and the two servers listen on
 * different ports: only that origin is taken out before the answers are compared.
 */
function normalised(answer: Record<string, unknown>, origin: string): Record<string, unknown> {
  const out = { ...answer };
  for (const link of ['next', 'previous']) {
    const url = out[link];
    if (typeof url === 'string' && url.startsWith(origin)) out[link] = url.slice(origin.length);
  }
  return out;
}

/** Throws unless the hand-written server answers a read with the API's JSON (issue #16: same response JSON). */
function sameAnswer(id: string, ours: unknown, hand: unknown): void {
  const difference = firstDifference(ours, hand);
  if (difference) {
    throw new Error(`${id}: the hand-written server answers otherwise than the API at ${difference}`);
  }
}

const wants = (prefix: string) =>
  !process.env.BENCH_SCENARIOS || process.env.BENCH_SCENARIOS.split(',').some((id) => id.startsWith(prefix));

async function seed(base: string, databaseUrl: string): Promise<Seeded> {
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const api = async (path: string, method = 'GET', body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? undefined : res.json();
  };
  const me = (await api('/api/users/@me/')) as {
    organization: { id: string };
    team: { id: number; api_token: string };
  };
  let dashboardId: number | undefined;
  const org = me.organization.id;
  const project = me.team.id;
  if (wants('dashboard')) process.stdout.write('seeding: 100 dashboards with 20 tiles each\n');
  for (let i = 0; i < 100 && wants('dashboard'); i++) {
    const d = (await api(`/api/projects/${project}/dashboards/`, 'POST', {
      name: `Dashboard ${i}`,
      pinned: i % 10 === 0,
    })) as { id: number };
    dashboardId ??= d.id;
    const tiles = Array.from({ length: 20 }, (_, j) => ({
      text: { body: `Tile ${j}` },
      layouts: { sm: { x: 0, y: j, w: 6, h: 5 } },
    }));
    await api(`/api/projects/${project}/dashboards/${d.id}/`, 'PATCH', { tiles });
  }
  if (wants('members')) process.stdout.write('seeding: 500 members\n');
  await Promise.all(
    Array.from({ length: 10 }, async (_, worker) => {
      for (let i = worker; i < 499 && wants('members'); i += 10) {
        const invite = (await api(`/api/organizations/${org}/invites/`, 'POST', {
          target_email: `member${i}@example.com`,
          send_email: false,
        })) as { id: string };
        const res = await fetch(`${base}/api/signup/${invite.id}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        });
        if (res.status !== 201) throw new Error(`signup: ${res.status} ${await res.text()}`);
      }
    }),
  );
  const seeded: Seeded = {
    organizationId: org,
    projectId: project,
    apiToken: me.team.api_token,
    base,
    key: KEY,
    dashboardId,
  };
  if (wants('event_definitions')) {
    process.stdout.write('seeding: 300 event definitions\n');
    const sql = sqlClient(databaseUrl);
    await sql`insert into event_definitions (project_id, name, created_at, last_seen_at, updated_at)
      select ${project}, 'event ' || lpad(i::text, 3, '0'), now(), now(), now() from generate_series(1, 300) as i`;
    await sql.end();
  }
  if (wants('dashboard_insights')) seeded.insightDashboardId = await seedInsightDashboard(api, project);
  if (wants('events') || wants('query') || wants('dashboard_insights')) {
    process.stdout.write(`seeding: ${EVENTS.toLocaleString('en')} events\n`);
    const sql = sqlClient(databaseUrl);
    await sql`
      insert into events (uuid, project_id, event, distinct_id, properties, timestamp)
      select gen_random_uuid(), ${project},
             (array['$pageview', '$pageview', '$autocapture', 'signup', 'purchase'])[1 + i % 5],
             'user-' || (i % 10000),
             jsonb_build_object('$browser', (array['Chrome', 'Firefox', 'Safari'])[1 + i % 3],
               'plan', (array['free', 'pro'])[1 + i % 2], 'n', i),
             now() - make_interval(secs => i * 2.592)
      from generate_series(1, ${EVENTS}) as i`;
    // Ingestion keeps each stored uuid in event_uuids, which dedup reads.
    await sql`insert into event_uuids (project_id, uuid, timestamp)
      select project_id, uuid, timestamp from events where project_id = ${project}`;
    await sql`analyze events`;
    await sql.end();
    let next: string | null = `/api/projects/${project}/events/`;
    for (let page = 1; page < 50 && next; page++) {
      next = ((await api(next.replace(/^https?:\/\/[^/]+/, ''))) as { next: string | null }).next;
    }
    if (next) seeded.eventsPage50 = next.replace(/^https?:\/\/[^/]+/, '');
  }
  // Both servers then read a settled database: without this, autovacuum and autoanalyze of the
  // freshly seeded tables could run during the first round, which always measures the API first.
  await settle(databaseUrl);
  return seeded;
}

async function settle(databaseUrl: string): Promise<void> {
  const sql = sqlClient(databaseUrl);
  await sql`vacuum analyze`;
  await sql.end();
}

const rows: Row[] = [];
const memory: { backend: string; apiMb: number; pg: Awaited<ReturnType<typeof postgresMemory>> }[] = [];
const bigBatches: ({ backend: string } & Awaited<ReturnType<typeof bigBatchHealth>>)[] = [];
const fairness: { backend: string; result: FairnessResult }[] = [];
// BENCH_BACKENDS=postgresql (or embedded) runs one of them only.
// Both backends run side by side and are measured in turn, scenario by scenario (issue #14 compares them).
const only = process.env.BENCH_BACKENDS;
await benchAll(
  (['embedded', 'postgresql'] as const).filter(
    (name) => (!only || only === name) && (name === 'embedded' || process.env.DATABASE_URL),
  ),
);

// Batch export throughput runs in a process of its own, so its peak RSS is the export's.
let exportLines: string[] = [];
if (process.env.DATABASE_URL && (!process.env.BENCH_SCENARIOS || process.env.BENCH_SCENARIOS.includes('export'))) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/export.ts'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    process.stdout.write(d);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error('the export benchmark failed');
  exportLines = [...new Set(out.split('\n').filter((l) => l.startsWith('| postgresql | batch export')))];
}

// BENCH_STARTUP=0 leaves out the fresh-clone `make run` timing (it runs npm ci in a clone).
const startup = process.env.BENCH_STARTUP === '0' ? undefined : await startupTimes();
if (startup)
  process.stdout.write(
    `make run on a fresh clone to the first 200: ${startup.firstMs} ms; restart: ${startup.restartMs} ms\n`,
  );

const table = [
  '| backend | scenario | target | req/s | events/s | p50 ms | p99 ms | errors | peak RSS MB | ratio |',
  '|---|---|---|---:|---:|---:|---:|---:|---:|---|',
  ...rows.map(
    (r) =>
      `| ${r.backend} | ${r.scenario} | ${r.target} | ${r.rps || ''} | ${r.itemsPerSecond ?? ''} | ` +
      `${r.rps ? r.p50 : ''} | ${r.rps ? r.p99 : ''} | ${r.rps ? r.errors : ''} | ${r.rssMb ?? ''} | ` +
      `${r.ratio ?? ''} |`,
  ),
].join('\n');
const verdict = (ok: boolean) => (ok ? 'pass' : 'FAIL');
/** The API's throughput in a scenario: its one measurement, or the mean of its rounds or passes. */
function apiRps(backend: string, scenario: string): number | undefined {
  const mine = rows.filter(
    (r) =>
      r.backend === backend &&
      r.scenario === scenario &&
      (r.target === 'api' || r.target.startsWith('api, round') || r.target.startsWith('api, pass')),
  );
  return mine.length ? Math.round(mine.reduce((n, r) => n + r.rps, 0) / mine.length) : undefined;
}
const scenarioNames = [
  ...new Set(rows.filter((r) => r.rps && r.target !== 'api, 1 connection').map((r) => r.scenario)),
];
const backendPairs = scenarioNames
  .map((name) => ({ name, embedded: apiRps('embedded', name), postgresql: apiRps('postgresql', name) }))
  .filter((p) => p.embedded && p.postgresql);
const backendTable = backendPairs.length
  ? [
      '',
      '',
      '## Embedded PostgreSQL against DATABASE_URL (issue #14: within 10%)',
      '',
      "The API's req/s on each backend. Both servers run side by side and are measured in turn, scenario by " +
        'scenario, the order reversed every other turn (A B B A); each figure is the mean of its rounds or passes.',
      '',
      '| scenario | embedded req/s | DATABASE_URL req/s | embedded / DATABASE_URL | within 10% |',
      '|---|---:|---:|---:|---|',
      ...backendPairs.map(
        (p) =>
          `| ${p.name} | ${p.embedded} | ${p.postgresql} | ${((p.embedded! / p.postgresql!) * 100).toFixed(0)}% | ` +
          `${verdict(p.embedded! >= 0.9 * p.postgresql!)} |`,
      ),
    ].join('\n')
  : '';
const handTable = roundRows.length
  ? [
      '',
      '',
      '## Reads against a hand-written server (issue #16)',
      '',
      'bench/handwritten.ts: bare Fastify + postgres.js (pool 10), three queries per read (key by sha256, ' +
        "membership, data), no cache, the contract's response schema. Each round measures the API and the " +
        `hand-written server, ${DURATION} s each (the API first in odd rounds, second in even ones), after both ` +
        'answers were found deep-equal; with two backends, a round measures both in turn. Goals: every round at ' +
        'least 120% of the hand-written req/s, no round more than 10% below the first, p99 under twice the ' +
        "hand-written p99. Round 1 follows as long a warm-up on each server; the hand-written server's own " +
        'change from its round 1 shows what the machine alone did between rounds.',
      '',
      '| backend | read | round | api req/s | api p99 ms | hand-written req/s | hand-written p99 ms | ratio ' +
        '| ≥ 120% | vs round 1 | hand-written vs round 1 | p99 < 2× | answer bytes (api / hand-written) |',
      '|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|',
      ...roundRows.map((r) => {
        const first = roundRows.find((x) => x.backend === r.backend && x.scenario === r.scenario && x.round === 1)!;
        const drift = r.ours.rps / first.ours.rps;
        const ratio = `${((r.ours.rps / r.hand.rps) * 100).toFixed(0)}%`;
        const vsFirst = `${((drift - 1) * 100).toFixed(0)}%${drift >= 0.9 ? '' : ' (FAIL)'}`;
        const handVsFirst = `${((r.hand.rps / first.hand.rps - 1) * 100).toFixed(0)}%`;
        return (
          `| ${r.backend} | ${r.scenario} | ${r.round} | ${r.ours.rps} | ${r.ours.p99} | ${r.hand.rps} ` +
          `| ${r.hand.p99} | ${ratio} | ${verdict(r.ours.rps >= 1.2 * r.hand.rps)} | ${vsFirst} | ${handVsFirst} ` +
          `| ${verdict(r.ours.p99 < 2 * r.hand.p99)} | ${r.oursBytes} / ${r.handBytes} |`
        );
      }),
    ].join('\n')
  : '';
/** BENCH_NOTE: a line about the run (a shared or busy machine, the knobs used), printed under the header. */
const NOTE = process.env.BENCH_NOTE ? `${process.env.BENCH_NOTE}\n\n` : '';
const header =
  `# Benchmark results\n\n${new Date().toISOString()} on ${cpus().length} cores ` +
  `(${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}; autocannon ${CONNECTIONS} connections ` +
  `(one where a row says so), ${DURATION} s per target after a 2 s warm-up (a read's rounds: round 1 after a ` +
  `${DURATION} s one, the others straight after the round before).\n\n`;
const exportTable = exportLines.length
  ? [
      '',
      '',
      '## Batch export',
      '',
      '| backend | scenario | destination | outcome | throughput | time | memory |',
      '|---|---|---|---|---:|---:|---|',
      ...exportLines,
    ].join('\n')
  : '';
const memoryTable = memory.length
  ? [
      '',
      '',
      '## Memory after the read scenarios',
      '',
      'The API process alone, and the PostgreSQL server behind it (postmaster and all its processes; RSS counts ' +
        'shared buffers in every process, PSS shares them out; on DATABASE_URL the whole server, other ' +
        'databases included).',
      '',
      '| backend | api RSS MB | node < 200 MB | PostgreSQL processes | PostgreSQL RSS MB | PostgreSQL PSS MB |',
      '|---|---:|---|---:|---:|---:|',
      ...memory.map(
        (m) =>
          `| ${m.backend} | ${m.apiMb} | ${verdict(m.apiMb < 200)} | ${m.pg.processes} | ${m.pg.rssMb} | ` +
          `${m.pg.pssMb} |`,
      ),
    ].join('\n')
  : '';
const bigTable = bigBatches.length
  ? [
      '',
      '',
      '## A 20 MiB /batch/ request and /_health',
      '',
      '| backend | body MB | events | status | ingest ms | /_health checks | slowest /_health ms | < 200 ms |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
      ...bigBatches.map(
        (b) =>
          `| ${b.backend} | ${b.mb} | ${b.events} | ${b.status} | ${b.ingestMs} | ${b.healthChecks} | ` +
          `${b.healthMaxMs} | ${verdict(b.healthMaxMs < 200)} |`,
      ),
    ].join('\n')
  : '';
const startupTable = startup
  ? [
      '',
      '',
      '## make run',
      '',
      'A fresh clone of the commit: `make run` (`npm ci --omit=dev` from a warm npm cache, the bundle, initdb, ' +
        'migrations, bootstrap) to the first 200 from `GET /api/projects/`, then Ctrl-C and `make run` again.',
      '',
      '| first make run | < 30 s | restart | < 3 s |',
      '|---:|---|---:|---|',
      `| ${(startup.firstMs / 1000).toFixed(1)} s | ${verdict(startup.firstMs < 30_000)} ` +
        `| ${(startup.restartMs / 1000).toFixed(1)} s | ${verdict(startup.restartMs < 3_000)} |`,
    ].join('\n')
  : '';
const fairnessTable = fairness.length
  ? [
      '',
      '',
      "## Another organization's select 1 while one organization runs four heavy queries",
      '',
      `${20} sequential \`select 1\` of a second organization, alone and while the seeded organization runs four ` +
        '`select count() from events a cross join events b` (until the statement timeout).',
      '',
      ...FAIRNESS_HEADER,
      ...fairness.flatMap((f) => fairnessRows(f.backend, 'this commit', f.result)),
    ].join('\n')
  : '';
const insightTable = insightRuns.length
  ? [
      '',
      '',
      `## A dashboard of ${INSIGHTS.length} insight tiles (issue #30)`,
      '',
      `Tiles: ${INSIGHTS.map((i) => i.name).join('; ')}. First load: the dashboard read with \`refresh=blocking\` ` +
        'on a cold cache (every tile computed), then twice with `force_blocking`. Cached load: a plain read ' +
        "(PostHog's default, every tile's result from the cache), measured in turns with the retrieve of a " +
        '20-text-tile dashboard (A B B A, the mean of two passes); goal: at least 80% of its req/s. The cache: ' +
        "the project's rows after the scenario, the answers' bytes, the table's size on disk (with its index and " +
        'TOAST), and hits / (hits + misses), a miss being a computed and stored answer.',
      '',
      '| backend | first loads ms | cached load req/s | text dashboard req/s | cached / text | ≥ 80% ' +
        '| refresh=blocking req/s | cache rows | answer bytes | table bytes | hits | misses | hit ratio |',
      '|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|',
      ...insightRuns.map((r) => {
        const c = r.cache;
        return (
          `| ${r.backend} | ${r.firstLoads.map((f) => `${f.ms} (${f.refresh})`).join(', ')} | ${r.cachedRps} ` +
          `| ${r.textRps} | ${((r.cachedRps / r.textRps) * 100).toFixed(0)}% ` +
          `| ${verdict(r.cachedRps >= 0.8 * r.textRps)} ` +
          `| ${r.blockingRps} | ${c.rows} | ${c.bytes} | ${c.tableBytes} | ${c.hits} | ${c.misses} ` +
          `| ${((c.hits / Math.max(1, c.hits + c.misses)) * 100).toFixed(1)}% |`
        );
      }),
    ].join('\n')
  : '';
const tables = [backendTable, insightTable, handTable, memoryTable, bigTable, fairnessTable, startupTable, exportTable];
// BENCH_OUT=<file>: where the results go (a focused run kept beside the full one in bench/results.md).
writeFileSync(
  process.env.BENCH_OUT ?? 'bench/results.md',
  `${header}${NOTE}${table}${tables.join('')}${beforeAndAfter()}\n`,
);
process.stdout.write(`\n${table}\n`);

/**
 * With BENCH_BEFORE=<an earlier results file> (a run of an earlier commit on the same machine), a
 * table of the API's own rows then and now, matched by backend, scenario and target.
 */
function beforeAndAfter(): string {
  const file = process.env.BENCH_BEFORE;
  if (!file) return '';
  const text = readFileSync(file, 'utf8');
  const cells = (line: string) =>
    line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
  const before = new Map<string, string[]>();
  for (const line of text.split('\n').filter((l) => l.startsWith('| '))) {
    const c = cells(line);
    before.set(c.slice(0, 3).join('|'), c);
  }
  const exportBefore = new Map(
    text
      .split('\n')
      .filter((l) => l.startsWith('| postgresql | batch export'))
      .map((l) => [cells(l)[2], cells(l)] as const),
  );
  const figure = (c: string[] | undefined, i: number) => c?.[i] || '–';
  const out = rows
    .filter((r) => r.target.startsWith('api'))
    .map((r) => {
      const then = before.get([r.backend, r.scenario, r.target === 'api RSS now' ? 'api RSS' : r.target].join('|'));
      const now = [r.rps || '', r.itemsPerSecond ?? '', r.rps ? r.p50 : '', r.rps ? r.p99 : '', r.rssMb ?? ''].map(
        String,
      );
      const latency = `${figure(then, 5)} / ${figure(then, 6)} → ${now[2] || '–'} / ${now[3] || '–'}`;
      return (
        `| ${r.backend} | ${r.scenario} | ${r.target} | ${figure(then, 3)} → ${now[0] || '–'} ` +
        `| ${figure(then, 4)} → ${now[1] || '–'} | ${latency} | ${figure(then, 8)} → ${now[4] || '–'} |`
      );
    });
  for (const line of exportLines) {
    const c = cells(line);
    const then = exportBefore.get(c[2]!);
    out.push(
      `| postgresql | ${c[1]} | ${c[2]} | | ${then?.[4] ?? '–'} → ${c[4]} | ${then?.[5] ?? '–'} → ${c[5]} | ` +
        `${(then?.[6] ?? '–').replace(/ \(.*/, '')} → ${c[6]!.replace(/ \(.*/, '')} |`,
    );
  }
  return [
    `\n\n## Before and after\n\nThe same scenarios on the same machine, before (${file}) and now. Export rows: ` +
      `throughput and time.\n`,
    '| backend | scenario | target | req/s | events/s | p50 / p99 ms (export: time) | peak RSS MB |',
    '|---|---|---|---:|---:|---:|---:|',
    ...out,
  ].join('\n');
}
