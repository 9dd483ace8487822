// The embedded default as `make run` meets it: DATABASE_URL unset, the server's own PostgreSQL cluster
// in DATA_DIR, created on first start, reused, recovered after a kill, shared with the CLI.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { clusterHome, liveOwner, ROOT_CLUSTERS, runningPostmaster, stopCluster } from '../src/db/embedded.js';
import { runCli, startServer, type ServerProcess } from './helpers/server-process.js';

if (process.env.DATABASE_URL) {
  t.plan(0, 'the embedded start-up path runs in the embedded pass of the suite');
  process.exit(0);
}

// mkdtemp makes a 0700 folder; as root the cluster runs as `postgres`, which must reach it.
const dataDir = mkdtempSync(join(tmpdir(), 'api-embedded-'));
chmodSync(dataDir, 0o755);
t.teardown(async () => {
  await stopCluster(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});
const env = { DATABASE_URL: '', DATA_DIR: dataDir, RATE_LIMITS: 'off' };
const key = 'phx_embeddedstartupkey0000000000000000000000000000';

async function start(extra: NodeJS.ProcessEnv = {}): Promise<{ server: ServerProcess; url: string; ms: number }> {
  const started = Date.now();
  const server = startServer({ ...env, ...extra });
  const url = await server.listening;
  return { server, url, ms: Date.now() - started };
}

async function projects(url: string): Promise<number> {
  return (await fetch(`${url}/api/projects/`, { headers: { authorization: `Bearer ${key}` } })).status;
}

const oneLine = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => !/npm warn/.test(l));

t.test('first start creates the cluster; a second server refuses; the CLI works beside it', async (t) => {
  const first = await start({ BOOTSTRAP_API_KEY: key });
  t.comment(`first start (initdb, migrations, bootstrap) to listening: ${first.ms} ms`);
  t.ok(existsSync(join(dataDir, 'pg', 'PG_VERSION')), 'the cluster is in DATA_DIR/pg');
  t.equal(await projects(first.url), 200);
  t.ok(runningPostmaster(dataDir), 'its postmaster runs');

  const second = startServer(env);
  t.equal(await second.exited, 1, 'a second server on the same data folder refuses to start');
  t.same(oneLine(second.output().stderr).length, 1, 'with one line');
  t.match(second.output().stderr, /in use by another process \(pid \d+\)/);
  t.equal(await projects(first.url), 200, 'and the first one is untouched');

  const cli = await runCli(['create-user', '--email', 'beside@example.com'], env);
  t.equal(cli.code, 0, `the CLI works beside the running server: ${cli.stderr}`);
  t.match(JSON.parse(cli.stdout), { email: 'beside@example.com' });
  t.ok(runningPostmaster(dataDir), 'and leaves the cluster running');

  first.server.child.kill('SIGTERM');
  t.equal(await first.server.exited, 0, 'SIGTERM stops the server cleanly');
  t.notOk(runningPostmaster(dataDir), 'and its cluster with it');
  t.notOk(existsSync(join(dataDir, 'owner.pid')), 'the folder is free again');
  t.match(
    readFileSync(join(dataDir, 'postgresql.log'), 'utf8'),
    /database system is shut down\s*$/,
    'a clean shutdown',
  );
});

t.test('the CLI alone starts the cluster and stops it again', async (t) => {
  const cli = await runCli(['create-user', '--email', 'alone@example.com'], env);
  t.equal(cli.code, 0, cli.stderr);
  t.match(JSON.parse(cli.stdout), { email: 'alone@example.com' });
  t.notOk(runningPostmaster(dataDir), 'no postmaster is left');
  t.notOk(liveOwner(dataDir));
});

t.test('a restart reuses the cluster', async (t) => {
  const again = await start();
  t.comment(`restart to listening: ${again.ms} ms`);
  t.notMatch(again.server.output().stdout, /phx_/, 'no second bootstrap');
  t.equal(await projects(again.url), 200, 'the data is kept');
  again.server.child.kill('SIGTERM');
  t.equal(await again.server.exited, 0);
});

t.test('after SIGKILL the next start recovers by itself', async (t) => {
  const killed = await start();
  killed.server.child.kill('SIGKILL');
  await killed.server.exited;
  const orphan = runningPostmaster(dataDir);
  t.ok(orphan, 'the killed server left its postmaster running');

  const cli = await runCli(['create-user', '--email', 'after-kill@example.com'], env);
  t.equal(cli.code, 0, `the CLI takes over a folder whose server was killed: ${cli.stderr}`);

  const recovered = await start();
  t.comment(`start after SIGKILL to listening: ${recovered.ms} ms`);
  t.equal(await projects(recovered.url), 200, 'recovered, with the data');

  // Now the postmaster too dies without cleaning up: its pid file stays behind.
  const postmaster = runningPostmaster(dataDir)!;
  recovered.server.child.kill('SIGKILL');
  process.kill(postmaster, 'SIGKILL');
  await recovered.server.exited;
  for (let i = 0; i < 100 && runningPostmaster(dataDir); i++) await new Promise((r) => setTimeout(r, 50));
  t.ok(existsSync(join(dataDir, 'pg', 'postmaster.pid')), 'a stale postmaster.pid is left');
  // Its socket's lock file names the dead postmaster; while a process of the cluster's user has
  // that pid (a zombie nobody reaps, or a reused pid), PostgreSQL refuses the socket. A sleep of
  // that user stands in for it.
  const lock = join(dataDir, 'run', '.s.PGSQL.5432.lock');
  t.ok(existsSync(lock), "and the socket's lock file");
  const asRoot = process.getuid?.() === 0;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  const standIn = spawn('sleep', ['120'], asRoot ? { uid: id('-u'), gid: id('-g') } : {});
  t.teardown(() => void standIn.kill());
  writeFileSync(lock, readFileSync(lock, 'utf8').replace(/^\d+/, String(standIn.pid)));
  const afterCrash = await start();
  t.equal(await projects(afterCrash.url), 200, 'the next start recovers from the crash');
  afterCrash.server.child.kill('SIGTERM');
  const stopped = Date.now();
  const code = await afterCrash.server.exited;
  // What the server logged while it stopped: the reason, should it not stop cleanly.
  const log = afterCrash.server.output();
  t.equal(
    code,
    0,
    `stopped in ${Date.now() - stopped} ms: ${(log.stdout + log.stderr).split('\n').slice(-8).join('\n')}`,
  );
  t.notOk(runningPostmaster(dataDir));
});

t.test('a data folder of the earlier embedded engine (PGlite) is refused in one line', async (t) => {
  const old = mkdtempSync(join(tmpdir(), 'api-pglite-'));
  t.teardown(() => rmSync(old, { recursive: true, force: true }));
  writeFileSync(join(old, 'PG_VERSION'), '17\n');
  mkdirSync(join(old, 'base'));
  const server = startServer({ ...env, DATA_DIR: old });
  t.equal(await server.exited, 1);
  const lines = oneLine(server.output().stderr);
  t.equal(lines.length, 1, lines.join('\n'));
  t.match(lines[0], /PGlite.*move it away or delete it/);
  t.notOk(existsSync(join(old, 'owner.pid')), 'and the folder is not claimed');
});

t.test('as root, a DATA_DIR the postgres user cannot reach keeps its cluster under /var/lib', async (t) => {
  if (process.getuid?.() !== 0) return void t.plan(0, 'only root runs the cluster as the postgres system user');
  // Root's own home is 0700 on most systems: a checkout there is this case.
  const closed = mkdtempSync(join(tmpdir(), 'api-closed-'));
  const inside = join(closed, 'checkout', '.data');
  const home = clusterHome(inside);
  t.teardown(async () => {
    await stopCluster(inside);
    rmSync(closed, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });
  t.match(home, new RegExp(`^${ROOT_CLUSTERS}/[0-9a-f]{16}$`), 'a folder of its own, named after DATA_DIR');
  const { server, url } = await start({ DATA_DIR: inside, BOOTSTRAP_API_KEY: key });
  t.equal(await projects(url), 200, 'the server starts and answers');
  const said = server
    .output()
    .stdout.split('\n')
    .filter((l) => l.includes('cluster is kept elsewhere'));
  t.equal(said.length, 1, 'the log says where the cluster is');
  t.equal(JSON.parse(said[0]!).cluster, home);
  t.ok(existsSync(join(home, 'pg', 'PG_VERSION')), 'the cluster is there');
  t.notOk(existsSync(join(inside, 'pg')), 'and not in DATA_DIR');
  t.ok(existsSync(join(inside, 'owner.pid')), 'DATA_DIR keeps the rest (the owner, the key)');
  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0);
  t.notOk(runningPostmaster(inside), 'stopped with the server');
});
