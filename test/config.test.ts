// Configuration is checked as a whole before the server opens anything: a bad variable is one line on
// stderr naming it, its value and what is allowed, exit code 2, and nothing created or written.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { loadConfig, VARIABLES } from '../src/config.js';
import { adminClient, createTestDatabase } from './helpers/db.js';
import { runCli, startServer } from './helpers/server-process.js';

const root = mkdtempSync(join(tmpdir(), 'api-config-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const database = await createTestDatabase();
t.teardown(() => database.drop());

async function users(): Promise<number> {
  const sql = adminClient(database.url);
  try {
    const [row] = await sql`select count(*)::int as n from users`;
    return row!.n as number;
  } finally {
    await sql.end();
  }
}

/** The server started with `env`; it must stop at once, having written nothing. */
async function refused(t: Test, env: NodeJS.ProcessEnv, embedded = false) {
  const dataDir = join(root, `data-${Math.random().toString(36).slice(2)}`);
  const server = startServer({ DATA_DIR: dataDir, DATABASE_URL: embedded ? '' : database.url, ...env });
  t.equal(await server.exited, 2, 'exit code 2');
  const { stdout, stderr } = server.output();
  t.equal(stdout, '', 'nothing on stdout');
  t.match(stderr, /^Invalid configuration: [^\n]+\n$/, 'one line on stderr');
  t.notOk(existsSync(dataDir), 'DATA_DIR not created (no cluster, no key file)');
  return stderr;
}

t.test('PORT=abc stops the server before migrations and the bootstrap', async (t) => {
  const line = await refused(t, { PORT: 'abc' });
  t.match(line, 'PORT="abc": expected an integer from 0 to 65535');
  t.equal(await users(), 0, 'no user was created');
});

t.test('the embedded database is not started either', async (t) => {
  const line = await refused(t, { PORT: '80800' }, true);
  t.match(line, 'PORT="80800": expected an integer from 0 to 65535');
});

t.test('every bad variable is named in the one line, with its value and what is allowed', async (t) => {
  const line = await refused(t, {
    DATABASE_POOL_SIZE: 'abc',
    LOG_LEVEL: 'verbose',
    BATCH_EXPORT_CONCURRENCY: '0',
    QUERY_TIMEOUT_SECONDS: '-1',
    RATE_LIMIT_BURST: '5/week',
    TRUST_PROXY: '10.0.0.0/8,proxy.local',
    WORKER: 'maybe',
  });
  t.match(line, 'DATABASE_POOL_SIZE="abc": expected an integer from 1 to 1000');
  t.match(line, 'LOG_LEVEL="verbose": expected one of fatal, error, warn, info, debug, trace, silent');
  t.match(line, 'BATCH_EXPORT_CONCURRENCY="0": expected an integer of at least 1');
  t.match(line, 'QUERY_TIMEOUT_SECONDS="-1": expected a number above 0');
  t.match(line, 'RATE_LIMIT_BURST="5/week": expected <count>/<second|minute|hour|day>');
  t.match(
    line,
    'TRUST_PROXY="10.0.0.0/8,proxy.local": expected a hop count from 1 to 32, or a comma list of IP addresses or CIDRs',
  );
  t.match(line, 'WORKER="maybe": expected on/off, 1/0, true/false or yes/no');
  t.equal(line.split('; ').length, 7, 'seven problems, one line');
  t.equal(await users(), 0);
});

t.test('secrets are named, never shown', async (t) => {
  const line = await refused(t, {
    ENCRYPTION_KEY: 'too-short-secret',
    DATABASE_URL: 'mysql://admin:hunter2@db.example/analytics',
  });
  t.match(line, 'ENCRYPTION_KEY=(hidden): expected 32 bytes as base64 or as 64 hex digits');
  t.match(line, 'DATABASE_URL="mysql://admin:***@db.example/analytics": expected a postgres:// or postgresql:// URL');
  t.notMatch(line, /too-short-secret|hunter2/);
});

t.test('metrics never share the API port', async (t) => {
  const line = await refused(t, { PORT: '8123', METRICS_PORT: '8123' });
  t.match(line, "METRICS_PORT=8123: expected a port other than PORT's");
});

t.test('a read replica needs a primary, and its URL is checked and shown without its password', async (t) => {
  const alone = await refused(t, { DATABASE_READ_URL: 'postgres://reader:s3cret@replica.example/db' }, true);
  t.match(alone, 'DATABASE_READ_URL: expected DATABASE_URL to be set too');
  const bad = await refused(t, {
    DATABASE_URL: 'postgres://x@db/db',
    DATABASE_READ_URL: 'mysql://r:s3cret@replica/db',
  });
  t.match(bad, 'DATABASE_READ_URL="mysql://r:***@replica/db": expected a postgres:// or postgresql:// URL');
  t.notMatch(`${alone}${bad}`, /s3cret/);
  const ok = loadConfig({ DATABASE_URL: 'postgres://x@db/db', DATABASE_READ_URL: 'postgres://x@replica/db' });
  t.equal(ok.databaseReadUrl, 'postgres://x@replica/db');
});

t.test('the CLI checks the same configuration', async (t) => {
  const run = await runCli(['create-user', '--email', 'x@example.com'], {
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '-3',
  });
  t.equal(run.code, 2);
  t.equal(run.stderr, 'Invalid configuration: DATABASE_POOL_SIZE="-3": expected an integer from 1 to 1000\n');
  t.equal(await users(), 0);
});

t.test('a valid environment: defaults, empty as unset, switches in any usual spelling', async (t) => {
  const config = loadConfig({
    PORT: '',
    RATE_LIMITS: 'OFF',
    WORKER: 'no',
    EMAIL_USE_TLS: 'true',
    QUERY_CONCURRENCY: '9',
  });
  t.equal(config.port, 8000);
  t.equal(config.rateLimits, false);
  t.equal(config.worker, false);
  t.equal(config.emailUseTls, true);
  t.equal(config.queryConcurrencyPerOrganization, 4, 'half the query slots');
  t.equal(config.metricsHost, '127.0.0.1', 'METRICS_HOST defaults to HOST');
  t.same(loadConfig({ TRUST_PROXY: ' 10.0.0.0/8, ::1 ' }).trustProxy, ['10.0.0.0/8', '::1']);
  t.equal(loadConfig({ TRUST_PROXY: ' 2 ' }).trustProxy, 2, 'a hop count');
  for (const bad of ['0', '33', '1.5', '2,10.0.0.1']) t.throws(() => loadConfig({ TRUST_PROXY: bad }), bad);
  t.equal(
    loadConfig({ BATCH_EXPORT_RETRIES: '0', HEALTH_CONNECTIONS: '0' }).exportRetries,
    0,
    'zero where it means off',
  );
});

/** The README's configuration table: each row's variables (first column) and defaults (second). */
function readmeTable(): Map<string, string> {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(
    readme.indexOf('## Configuration'),
    readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1),
  );
  const rows = new Map<string, string>();
  for (const line of section.split('\n').filter((l) => l.startsWith('| `'))) {
    const [, names = '', defaults = ''] = line.split('|');
    for (const name of names.match(/`[A-Z0-9_]+`/g) ?? []) rows.set(name.slice(1, -1), defaults.trim());
  }
  return rows;
}

t.test("the README's table names every variable of the schema, and only those, with their defaults", async (t) => {
  const table = readmeTable();
  t.same([...table.keys()].sort(), Object.keys(VARIABLES).sort(), 'the same variables');
  for (const [name, variable] of Object.entries(VARIABLES)) {
    const fallback = (variable as { default?: string | number }).default;
    if (fallback === undefined) continue;
    t.ok(table.get(name)?.includes(`\`${fallback}\``), `${name}: default \`${fallback}\` in the README`);
  }
});
