// The server as `npm start` runs it encrypts secrets an older version stored in plain text, with
// ENCRYPTION_KEY when set, else with a key it generates into the data folder (and says so).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { eq } from 'drizzle-orm';
import { bootstrap } from '../src/bootstrap.js';
import type { Database } from '../src/db/client.js';
import { batch_exports, projects } from '../src/db/schema/index.js';
import { SecretBox } from '../src/secrets/index.js';
import { parseKey } from '../src/secrets/key.js';
import { openTestDatabase } from './helpers/db.js';
import { startServer } from './helpers/server-process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'api-secrets-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const test = await openTestDatabase();
t.teardown(async () => {
  await test.database.close();
  await test.drop();
});
const backend: NodeJS.ProcessEnv = { DATABASE_URL: test.url, DATA_DIR: dataDir };

/** The suite's database, as the server will see it. */
async function withDb<T>(fn: (database: Database) => Promise<T>): Promise<T> {
  return fn(test.database);
}

async function plainExport(token: string): Promise<string> {
  return withDb(async ({ db }) => {
    await bootstrap(db, { email: 'admin@example.com', apiKey: `phx_${randomBytes(20).toString('hex')}` });
    const [project] = await db.select().from(projects).limit(1);
    const [row] = await db
      .insert(batch_exports)
      .values({
        project_id: project!.id,
        name: 'old',
        destination_type: 'HTTP',
        destination_config: { url: 'http://127.0.0.1:9/', token },
        paused: true,
      })
      .returning();
    return row!.id;
  });
}

const storedToken = (id: string) =>
  withDb(
    async ({ db }) =>
      (await db.select().from(batch_exports).where(eq(batch_exports.id, id)))[0]!.destination_config.token as string,
  );

async function runServer(env: NodeJS.ProcessEnv) {
  const server = startServer({ ...backend, ...env });
  await server.listening;
  server.child.kill('SIGTERM');
  await server.exited;
  return server.output();
}

t.test('with ENCRYPTION_KEY, the plain secrets of an older version are encrypted at start-up', async (t) => {
  const key = randomBytes(32);
  const id = await plainExport('phc_plain_before_upgrade');
  const out = await runServer({ ENCRYPTION_KEY: key.toString('base64') });
  t.match(out.stdout, /"batch_exports":1,"plugin_configs":0,"msg":"Encrypted the stored secrets of older versions"/);
  const token = await storedToken(id);
  t.match(token, /^enc:v1:/);
  t.equal(new SecretBox(key).open(token), 'phc_plain_before_upgrade');
  t.notOk(existsSync(join(dataDir, 'encryption.key')), 'no key file when the key is given');
  t.notMatch(out.stdout, /"level":40/, 'no warning');

  const again = await runServer({ ENCRYPTION_KEY: key.toString('hex') });
  t.notMatch(again.stdout, /Encrypted the stored secrets/, 'the next start has nothing to do');
  t.equal(await storedToken(id), token);
});

t.test('without it, a key is generated into the data folder and a shared database is warned about', async (t) => {
  const id = await plainExport('phc_plain_generated');
  const out = await runServer({ ENCRYPTION_KEY: '' });
  const key = parseKey(readFileSync(join(dataDir, 'encryption.key'), 'utf8'), 'the key file');
  t.equal(new SecretBox(key).open(await storedToken(id)), 'phc_plain_generated');
  const warnings = out.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.level === 40);
  t.match(warnings[0]?.msg, /^Generated an encryption key/, 'a JSON warning line in the log stream');
  t.match(warnings[1]?.msg, /ENCRYPTION_KEY is not set.*Every process that shares DATABASE_URL must use the same key/s);
});

t.test('a malformed ENCRYPTION_KEY stops the server with a clear message', async (t) => {
  const server = startServer({ ...backend, ENCRYPTION_KEY: 'too-short' });
  t.equal(await server.exited, 2);
  t.match(server.output().stderr, /ENCRYPTION_KEY=\(hidden\): expected 32 bytes as base64 or as 64 hex digits/);
});
