// What the server says at start is part of its JSON log: the first key's banner and the warnings are
// lines pino's readers parse, not plain text between them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createTestDatabase } from './helpers/db.js';
import { startServer } from './helpers/server-process.js';

t.test("the first start's key banner is a JSON log line, and the key works", async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.drop());
  // No ENCRYPTION_KEY: the server generates one into DATA_DIR and warns twice (it is kept on this machine only).
  const dataDir = mkdtempSync(join(tmpdir(), 'api-start-log-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = startServer({
    DATABASE_URL: database.url,
    BOOTSTRAP_API_KEY: '',
    BOOTSTRAP_EMAIL: 'ops@example.com',
    ENCRYPTION_KEY: '',
    DATA_DIR: dataDir,
  });
  t.teardown(() => void server.child.kill('SIGKILL'));
  const base = await server.listening;
  const lines = server.output().stdout.trim().split('\n');
  const parsed = lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  });
  t.same(
    lines.filter((_, i) => !parsed[i]),
    [],
    'every line on stdout is JSON',
  );
  const banner = parsed.find((l) => l?.personal_api_key);
  t.match(banner, { level: 30, email: 'ops@example.com', scopes: ['*'], msg: /shown only now/ });
  t.match(banner?.pid, Number);
  const key = String(banner?.personal_api_key);
  t.match(key, /^phx_/);
  const res = await fetch(`${base}/api/organizations/`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(res.status, 200, 'the key from the log line authenticates');
  const warnings = parsed.filter((l) => l?.level === 40).map((l) => String(l?.msg));
  for (const warning of [/^Generated an encryption key for stored secrets in /, /^ENCRYPTION_KEY is not set: /])
    t.ok(
      warnings.some((w) => warning.test(w)),
      `a JSON warning: ${warning.source}`,
    );
  t.equal(server.output().stderr, '', 'nothing on stderr');
});
