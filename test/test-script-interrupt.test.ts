// `make test` interrupted (Ctrl-C) must not leave its embedded PostgreSQL running: tap's `after` script does
// not run then, so scripts/test.sh stops the cluster itself. The run here is a copy of the project's layout in a
// folder of its own (its `.tap/pg` cluster apart from this run's), interrupted while a test file waits.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { runningPostmaster, stopCluster } from '../src/db/embedded.js';

t.test('an interrupted test run stops the cluster it started', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'interrupted-run-'));
  // The embedded cluster runs as the postgres user, who must reach the folder.
  chmodSync(dir, 0o755);
  const cluster = join(dir, '.tap', 'pg');
  t.teardown(async () => {
    await stopCluster(cluster).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  for (const name of ['node_modules', 'src', 'scripts', 'package.json', 'tsconfig.json', 'generated', 'drizzle']) {
    symlinkSync(resolve(name), join(dir, name));
  }
  mkdirSync(join(dir, 'test'));
  symlinkSync(resolve('test/helpers'), join(dir, 'test', 'helpers'));
  writeFileSync(
    join(dir, 'test', 'waits.test.ts'),
    "import t from 'tap';\nt.test('waits', () => new Promise((r) => setTimeout(r, 120_000)));\n",
  );
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  for (const k of Object.keys(env)) if (k.startsWith('TAP')) delete env[k];
  const run = spawn('bash', ['scripts/test.sh', 'test/waits.test.ts'], {
    cwd: dir,
    env,
    detached: true,
    stdio: 'pipe',
  });
  let output = '';
  run.stdout.on('data', (d) => (output += d));
  run.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((r) => run.once('exit', (code) => r(code)));
  t.teardown(() => {
    try {
      process.kill(-run.pid!, 'SIGKILL');
    } catch {}
  });

  let pid: number | undefined;
  for (const end = Date.now() + 120_000; !pid && Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    // The cluster is up (the `before` script names its version) and the test file has started.
    if (/# Subtest: test\/waits\.test\.ts/.test(output)) pid = runningPostmaster(cluster);
  }
  t.ok(pid, 'the run started its cluster and its test file');
  if (!pid) t.comment(output);
  await new Promise((r) => setTimeout(r, 1000));
  // Ctrl-C: the terminal's SIGINT goes to the whole foreground process group.
  process.kill(-run.pid!, 'SIGINT');
  const code = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 90_000))]);
  t.not(code, 'hung', 'the interrupted run ends');
  t.equal(runningPostmaster(cluster), undefined, 'its cluster is stopped');
});
