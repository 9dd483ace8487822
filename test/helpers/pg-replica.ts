// A real streaming replica (hot standby) of the suite's PostgreSQL server at DATABASE_URL, for the read
// replica's test: pg_basebackup -R into a temporary folder, then started with the server's own pg_ctl on
// a free port of 127.0.0.1 as the postgres user. The suite's server is never restarted or reconfigured,
// except that a pg_hba.conf without a replication entry gets one for 127.0.0.1 (then a reload).
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminClient } from './db.js';

export interface Replica {
  /** The replica's URL for `database`. */
  url(database: string): string;
  stop(): void;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Why a replica of `primaryUrl` cannot be made here, or undefined when it can. */
export async function replicaUnavailable(primaryUrl: string): Promise<string | undefined> {
  const admin = adminClient(primaryUrl);
  try {
    const [s] = await admin<{ level: string; senders: number; version: number; superuser: boolean }[]>`
      select current_setting('wal_level') as level, current_setting('max_wal_senders')::int as senders,
             current_setting('server_version_num')::int / 10000 as version,
             (select rolsuper from pg_roles where rolname = current_user) as superuser`;
    if (!s!.superuser) return 'the DATABASE_URL user is not a superuser (it must pause replay and read the hba file)';
    if (s!.level === 'minimal') return 'wal_level is minimal on the DATABASE_URL server (a restart would be needed)';
    if (s!.senders < 1) return 'max_wal_senders is 0 on the DATABASE_URL server (a restart would be needed)';
    const bin = `/usr/lib/postgresql/${s!.version}/bin`;
    if (!existsSync(join(bin, 'pg_basebackup'))) return `${bin}/pg_basebackup is not installed`;
    return undefined;
  } finally {
    await admin.end();
  }
}

/**
 * Lets the postgres user replicate from 127.0.0.1 when pg_hba.conf has no `replication` entry (a fresh
 * Debian cluster has none for TCP): one line is appended and the configuration reloaded, no restart.
 */
async function allowReplication(primaryUrl: string): Promise<void> {
  const admin = adminClient(primaryUrl);
  try {
    const rules = await admin<{ n: number }[]>`
      select count(*)::int as n from pg_hba_file_rules
      where type = 'host' and 'replication' = any(database) and error is null
        and (address is null or address in ('127.0.0.1', 'all', 'samehost', 'samenet'))`;
    if (rules[0]!.n > 0) return;
    const [{ file }] = (await admin`select current_setting('hba_file') as file`) as unknown as [{ file: string }];
    appendFileSync(
      file,
      '\n# streaming replicas of this host (added by the read replica test)\nhost replication all 127.0.0.1/32 trust\n',
    );
    await admin`select pg_reload_conf()`;
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await admin.end();
  }
}

export async function startReplica(primaryUrl: string): Promise<Replica> {
  await allowReplication(primaryUrl);
  const admin = adminClient(primaryUrl);
  const [{ version }] =
    (await admin`select current_setting('server_version_num')::int / 10000 as version`) as unknown as [
      { version: number },
    ];
  // A hot standby refuses to start with less of these than its primary has.
  const matched = await admin<{ name: string; setting: string }[]>`
    select name, setting from pg_settings where name in ('max_connections', 'max_worker_processes',
      'max_wal_senders', 'max_prepared_transactions', 'max_locks_per_transaction')`;
  await admin.end();
  const bin = `/usr/lib/postgresql/${version}/bin`;
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'pg-replica-'));
  const data = join(dir, 'data');
  if (root) {
    chmodSync(dir, 0o755);
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    const res = spawnSync(file, argv, { encoding: 'utf8', timeout: 180_000, env: { ...process.env, ...env } });
    if (res.status !== 0) throw new Error(`${cmd} failed: ${res.stderr || res.stdout}`);
  };
  const p = new URL(primaryUrl);
  // -R writes standby.signal and primary_conninfo; -X stream brings the WAL of the copy through a temporary
  // slot, so nothing is left on the primary. The standby then streams without a slot.
  run(
    'pg_basebackup',
    [
      '-h',
      p.hostname,
      '-p',
      p.port || '5432',
      '-U',
      decodeURIComponent(p.username || 'postgres'),
      '-D',
      data,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ],
    p.password ? { PGPASSWORD: decodeURIComponent(p.password) } : {},
  );
  const port = await freePort();
  // A Debian cluster keeps its configuration outside the data folder: the replica gets its own.
  const own = (name: string, text: string) => {
    writeFileSync(join(data, name), text);
    if (root) execFileSync('chown', ['postgres:postgres', join(data, name)]);
  };
  own(
    'postgresql.conf',
    [
      `listen_addresses = '127.0.0.1'`,
      `port = ${port}`,
      `unix_socket_directories = '${dir}'`,
      'hot_standby = on',
      ...matched.map((m) => `${m.name} = ${m.setting}`),
      'shared_buffers = 32MB',
      'fsync = off',
      `hba_file = '${join(data, 'pg_hba.conf')}'`,
      `ident_file = '${join(data, 'pg_ident.conf')}'`,
      '',
    ].join('\n'),
  );
  own('pg_hba.conf', 'local all all trust\nhost all all 127.0.0.1/32 trust\n');
  own('pg_ident.conf', '');
  run('pg_ctl', ['-D', data, '-w', '-t', '60', '-l', join(dir, 'log'), 'start']);
  let gone = false;
  const replica: Replica = {
    url(database) {
      const u = new URL(primaryUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      u.pathname = `/${database}`;
      return u.toString();
    },
    stop() {
      if (gone) return;
      gone = true;
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
  process.once('exit', () => replica.stop());
  return replica;
}
