import { randomBytes } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

export interface ServerProcess {
  child: ChildProcess;
  /** The base URL once the server listens. */
  listening: Promise<string>;
  exited: Promise<number | null>;
  output(): { stdout: string; stderr: string };
}

let bundles: string | undefined;

/** The server and the CLI bundled as `npm start` and `npm run cli` bundle them, in this test process's own folder. */
function bundled(name: 'server' | 'worker' | 'cli'): string {
  if (!bundles) {
    const outdir = `dist/test-${process.pid}`;
    execFileSync(process.execPath, ['scripts/build.mjs', outdir]);
    process.on('exit', () => rmSync(outdir, { recursive: true, force: true }));
    bundles = outdir;
  }
  return `${bundles}/${name}.mjs`;
}

/**
 * The server as a separate process on a port of its own, the way `npm start` runs it: the bundled
 * JavaScript in one node process, so signals reach the server itself.
 */
const TEST_ENCRYPTION_KEY = randomBytes(32).toString('base64');

/** `wrapper` runs the server under another command (e.g. `prlimit --nofile=300 --`). */
export function startServer(env: NodeJS.ProcessEnv, wrapper: string[] = []): ServerProcess {
  const node = [process.execPath, '--heap-growing-percent=50', '--enable-source-maps', bundled('server')];
  const [command, ...args] = [...wrapper, ...node] as [string, ...string[]];
  const child = spawn(command, args, {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8,::1/128',
      // A key of the test's own, so that no server writes a key file into the working directory.
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      ...env,
    },
  });
  return watched(child, 'server', (stdout) => /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1]);
}

/**
 * A spawned process's output, its exit, and `listening`: the first value `ready` reads from its stdout (checked
 * every 25 ms), or a rejection naming `what` if it exits first.
 */
function watched(child: ChildProcess, what: string, ready: (stdout: string) => string | undefined): ServerProcess {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const value = ready(stdout);
      if (value === undefined) return;
      clearInterval(timer);
      resolve(value);
    }, 25);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`${what} exited: ${stdout}${stderr}`));
    });
  });
  listening.catch(() => {});
  return { child, listening, exited, output: () => ({ stdout, stderr }) };
}

/**
 * `npm run worker` as a process of its own, as the server is above; its `listening` resolves once the
 * worker has started, to its metrics URL (empty without METRICS_PORT).
 */
export function startWorkerProcess(env: NodeJS.ProcessEnv): ServerProcess {
  const child = spawn(process.execPath, ['--enable-source-maps', bundled('worker')], {
    env: { ...process.env, ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8,::1/128', ENCRYPTION_KEY: TEST_ENCRYPTION_KEY, ...env },
  });
  return watched(child, 'worker', (stdout) =>
    stdout.includes('"msg":"batch export worker started"')
      ? (/"url":"(http:\/\/[^"]+)"[^\n]*"msg":"metrics listening"/.exec(stdout)?.[1] ?? '')
      : undefined,
  );
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The operator CLI as `npm run cli` runs it, with `env` over this process's environment. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--enable-source-maps', bundled('cli'), ...args], {
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
