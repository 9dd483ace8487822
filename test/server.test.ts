// The process as a user runs it: `make run`'s server and the operator CLI, on a database of their own.
import t from 'tap';
import { openTestDatabase } from './helpers/db.js';
import { runCli, startServer } from './helpers/server-process.js';

const test = await openTestDatabase();
t.teardown(async () => {
  await test.database.close();
  await test.drop();
});
// A fresh database on the suite's server (embedded.test.ts runs the same on a data folder of its own).
const backend: NodeJS.ProcessEnv = { DATABASE_URL: test.url };

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

  server.child.kill('SIGTERM');
  t.equal(await server.exited, 0, 'SIGTERM stops the server cleanly');
});

t.test('the CLI works on the same database', async (t) => {
  for (const flag of ['--help', '-h', 'help']) {
    const help = await runCli([flag], backend);
    t.equal(help.code, 0, `${flag} is not an unknown command`);
    t.match(help.stdout, /^usage: npm run --silent cli -- <command>/, 'the usage goes to stdout');
  }
  const user = await runCli(['create-user', '--email', 'ops@example.com', '--first-name', 'Ops'], backend);
  t.equal(user.code, 0, user.stderr);
  const created = JSON.parse(user.stdout);
  t.match(created, { email: 'ops@example.com', first_name: 'Ops' });
  const org = JSON.parse(
    (await runCli(['create-organization', '--email', 'ops@example.com', '--name', 'Ops Org'], backend)).stdout,
  );
  t.match(org, { name: 'Ops Org', membership_level: 15, member_count: 1 });
  const project = JSON.parse(
    (await runCli(['create-project', '--organization', org.id, '--name', 'Second'], backend)).stdout,
  );
  t.match(project, { name: 'Second', organization: org.id });
  await runCli(['create-user', '--email', 'dev@example.com'], backend);
  const member = await runCli(
    ['add-member', '--organization', org.id, '--email', 'dev@example.com', '--level', '8'],
    backend,
  );
  t.match(JSON.parse(member.stdout), { organization_id: org.id, level: 8 });
  const key = JSON.parse(
    (
      await runCli(
        ['create-key', '--email', 'dev@example.com', '--scopes', 'project:read', '--scoped-teams', String(project.id)],
        backend,
      )
    ).stdout,
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
