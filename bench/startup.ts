// `make run` as a new user meets it: a fresh clone of this commit, `make run` (npm ci of the server's
// packages from the npm cache, the bundle, initdb, migrations, bootstrap) to the first 200 from the API,
// then Ctrl-C and a second `make run` (the restart). Prints both times.
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runningPostmaster, stopCluster } from '../src/db/embedded.js';

const KEY = 'phx_startupbenchkey00000000000000000000000000000000';

async function makeRunToFirst200(dir: string, port: number): Promise<{ ms: number; stop(): Promise<void> }> {
  const started = Date.now();
  // Its own process group, so the Ctrl-C below reaches make, npm and the server as a terminal's would.
  const child = spawn('make', ['run'], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: '',
      DATA_DIR: '',
      BOOTSTRAP_API_KEY: KEY,
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: '',
    },
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/api/projects/`, {
      headers: { authorization: `Bearer ${KEY}` },
    }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (child.exitCode !== null) throw new Error(`make run exited ${child.exitCode}: ${out.slice(-2000)}`);
    if (Date.now() - started > 300_000) throw new Error(`no 200 within 300 s: ${out.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const ms = Date.now() - started;
  return {
    ms,
    async stop() {
      process.kill(-child.pid!, 'SIGINT');
      await exited;
    },
  };
}

export async function startupTimes(): Promise<{ firstMs: number; restartMs: number; leftRunning: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-clone-'));
  // As root the cluster runs as `postgres`, which must be able to enter the clone.
  chmodSync(dir, 0o755);
  const port = 17000 + Math.floor(Math.random() * 1000);
  try {
    execFileSync('git', ['clone', '--quiet', process.cwd(), dir]);
    const first = await makeRunToFirst200(dir, port);
    await first.stop();
    const restart = await makeRunToFirst200(dir, port);
    await restart.stop();
    return {
      firstMs: first.ms,
      restartMs: restart.ms,
      leftRunning: runningPostmaster(join(dir, '.data')) !== undefined,
    };
  } finally {
    await stopCluster(join(dir, '.data'));
    rmSync(dir, { recursive: true, force: true });
  }
}
