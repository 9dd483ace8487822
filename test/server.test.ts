// The process as a user runs it: `make run`'s server and the operator CLI, on a data folder of their own.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openTestDatabase } from './helpers/db.js';
import { startServer } from './helpers/server-process.js';

const tsx = join('node_modules', '.bin', 'tsx');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(tsx, ['src/cli/index.ts', ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const dataDir = mkdtempSync(join(tmpdir(), 'api-data-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const test = await openTestDatabase();
t.teardown(async () => {
  await test.database.close();
  await test.drop();
});
// The suite's backend: the embedded database in a folder, or a fresh PostgreSQL database.
const backend: NodeJS.ProcessEnv = test.url ? { DATABASE_URL: test.url } : { DATA_DIR: dataDir, DATABASE_URL: '' };

t.test('first start bootstraps an owner, an organization, a project and the given key', async (t) => {
  const key = 'phx_bootstrapkeyforthetestsuite0123456789abcdef';
  const server = startServer({ ...backend, BOOTSTRAP_API_KEY: key, LOG_LEVEL: 'info' });
  const url = await server.listening;
  const orgs = await fetch(`${url}/api/organizations/`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(orgs.status, 200);
  const body = (await orgs.json()) as { results: { name: string; projects: { name: string }[] }[] };
  t.equal(body.results[0]?.name, 'Default organization');
  t.equal(body.results[0]?.projects[0]?.name, 'Default project');
  t.notMatch(server.output().stdout, /phx_/, 'a given key is not printed');
  const ready = await fetch(`${url}/_readyz`);
  t.equal(ready.status, 200);

  if (!test.url) {
    const second = startServer({ ...backend });
    t.equal(await second.exited, 1, 'a second server on the same data folder refuses to start');
    t.match(second.output().stderr, /in use by another process/);
    const cli = await runCli(['create-user', '--email', 'x@example.com'], backend);
    t.equal(cli.code, 1, 'so does the CLI');
    t.equal(cli.stderr.trim().split('\n').filter((l) => !/npm warn/.test(l)).length, 1, 'with one line');
  }

  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0, 'SIGTERM stops the server cleanly');
});

t.test('the CLI works on the same database', async (t) => {
  const user = await runCli(['create-user', '--email', 'ops@example.com', '--first-name', 'Ops'], backend);
  t.equal(user.code, 0, user.stderr);
  const created = JSON.parse(user.stdout);
  t.match(created, { email: 'ops@example.com', first_name: 'Ops' });
  const org = JSON.parse((await runCli(['create-organization', '--email', 'ops@example.com', '--name', 'Ops Org'], backend)).stdout);
  t.match(org, { name: 'Ops Org', membership_level: 15 });
  const project = JSON.parse((await runCli(['create-project', '--organization', org.id, '--name', 'Second'], backend)).stdout);
  t.match(project, { name: 'Second', organization: org.id });
  await runCli(['create-user', '--email', 'dev@example.com'], backend);
  const member = await runCli(['add-member', '--organization', org.id, '--email', 'dev@example.com', '--level', '8'], backend);
  t.match(JSON.parse(member.stdout), { organization_id: org.id, level: 8 });
  const key = JSON.parse(
    (await runCli(['create-key', '--email', 'dev@example.com', '--scopes', 'project:read', '--scoped-teams', String(project.id)], backend)).stdout,
  );
  t.match(key, { value: /^phx_/, scopes: ['project:read'], scoped_teams: [project.id] });

  const server = startServer({ ...backend });
  const url = await server.listening;
  const res = await fetch(`${url}/api/projects/${project.id}/`, { headers: { authorization: `Bearer ${key.value}` } });
  t.equal(res.status, 200, 'a key made by the CLI works against the server');
  t.notMatch(server.output().stdout, /phx_/, 'no bootstrap on a database that has users');
  server.child.kill('SIGTERM');
  await server.exited;

  const bad = await runCli(['create-key', '--email', 'dev@example.com', '--scopes', 'nope'], backend);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /Invalid scope: nope/);
  const unknownFlag = await runCli(['create-user', '--mail', 'x'], backend);
  t.equal(unknownFlag.code, 2);
  const dup = await runCli(['create-user', '--email', 'ops@example.com'], backend);
  t.equal(dup.code, 1);
  t.match(dup.stderr, /already exists/);
});
