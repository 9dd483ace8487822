// Every write that takes access away takes effect on the very next request, although no handler
// invalidates the auth cache: the database's trigger marks the transaction (and notifies the other
// processes), and the client invalidates before the writing call returns. Each case warms the cache with
// the key first, so a cached principal that outlived the write would answer 200.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { eq, sql } from 'drizzle-orm';
import t, { type Test } from 'tap';
import { organizations, users } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeMember, makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads the organization with `key` twice (the second read is a cache hit), checking it works. */
async function warm(t: Test, key: string, organizationId: string) {
  for (let i = 0; i < 2; i++) {
    const res = await call('organizations_retrieve', { key, params: { id: organizationId } });
    t.equal(res.status, 200, 'the key works (and is cached) before the write');
  }
}
const status = async (key: string, organizationId: string) =>
  (await call('organizations_retrieve', { key, params: { id: organizationId } })).status;

async function keyId(owner: string, label?: string): Promise<string> {
  const res = await call('personal_api_keys_list', { key: owner });
  const keys = res.body as { id: string; label: string }[];
  return (label ? keys.find((k) => k.label === label) : keys[0])!.id;
}

t.test('a deleted key is refused at once', async (t) => {
  const a = await makeTenant(db);
  await warm(t, a.key, a.organization.id);
  const del = await call('personal_api_keys_destroy', { key: a.key, params: { id: '@current' } });
  t.equal(del.status, 204);
  t.equal(await status(a.key, a.organization.id), 401);
});

t.test('a rolled key is refused at once under its old value', async (t) => {
  const a = await makeTenant(db);
  await warm(t, a.key, a.organization.id);
  const roll = await call('personal_api_keys_roll_create', { key: a.key, params: { id: '@current' } });
  t.equal(roll.status, 200);
  t.equal(await status(a.key, a.organization.id), 401);
  t.equal(await status((roll.body as { value: string }).value, a.organization.id), 200);
});

t.test("a key's narrowed scopes hold at once", async (t) => {
  const a = await makeTenant(db);
  const made = await call('personal_api_keys_create', { key: a.key, body: { label: 'narrow', scopes: ['*'] } });
  const key = (made.body as { value: string }).value;
  await warm(t, key, a.organization.id);
  const id = await keyId(a.key, 'narrow');
  const patch = await call('personal_api_keys_partial_update', {
    key: a.key,
    params: { id },
    body: { scopes: ['dashboard:read'] },
  });
  t.equal(patch.status, 200);
  t.equal(await status(key, a.organization.id), 403);
});

t.test("a removed member's key is refused at once", async (t) => {
  const a = await makeTenant(db);
  const m = await makeMember(db, a, 1);
  await warm(t, m.key, a.organization.id);
  const del = await call('members_destroy', {
    key: a.key,
    params: { organization_id: a.organization.id, user__uuid: m.user.uuid },
  });
  t.equal(del.status, 204);
  t.not(await status(m.key, a.organization.id), 200);
});

t.test("a demoted administrator's key loses the administrator's rights at once", async (t) => {
  const a = await makeTenant(db);
  const m = await makeMember(db, a, 8);
  const rename = (name: string) =>
    call('organizations_partial_update', { key: m.key, params: { id: a.organization.id }, body: { name } });
  t.equal((await rename('By an admin')).status, 200, 'an administrator may rename (and is cached)');
  const demote = await call('members_partial_update', {
    key: a.key,
    params: { organization_id: a.organization.id, user__uuid: m.user.uuid },
    body: { level: 1 },
  });
  t.equal(demote.status, 200);
  t.equal((await rename('By a member')).status, 403);
});

t.test("members' keys switched off for the organization are refused at once", async (t) => {
  const a = await makeTenant(db);
  const m = await makeMember(db, a, 1);
  await warm(t, m.key, a.organization.id);
  const off = await call('organizations_partial_update', {
    key: a.key,
    params: { id: a.organization.id },
    body: { members_can_use_personal_api_keys: false },
  });
  t.equal(off.status, 200);
  t.equal(await status(m.key, a.organization.id), 403);
});

t.test("a deleted organization's keys no longer reach it", async (t) => {
  const a = await makeTenant(db);
  const m = await makeMember(db, a, 1);
  await warm(t, m.key, a.organization.id);
  const del = await call('organizations_destroy', { key: a.key, params: { id: a.organization.id } });
  t.equal(del.status, 204);
  t.not(await status(m.key, a.organization.id), 200);
});

t.test(
  'a user deactivated in any transaction, by code that knows nothing of the cache, is refused at once',
  async (t) => {
    const a = await makeTenant(db);
    await warm(t, a.key, a.organization.id);
    await db.transaction((tx) => tx.update(users).set({ is_active: false }).where(eq(users.id, a.user.id)));
    t.equal(await status(a.key, a.organization.id), 401);
  },
);

t.test('a write outside any transaction (an operator at psql) still reaches the cache', async (t) => {
  const a = await makeTenant(db);
  const m = await makeMember(db, a, 1);
  await warm(t, m.key, a.organization.id);
  await db
    .update(organizations)
    .set({ members_can_use_personal_api_keys: false })
    .where(eq(organizations.id, a.organization.id));
  // The trigger's NOTIFY arrives on this process's LISTEN connection a moment after the commit.
  let seen = await status(m.key, a.organization.id);
  for (let i = 0; seen === 200 && i < 200; i++) {
    await pause(50);
    seen = await status(m.key, a.organization.id);
  }
  t.equal(seen, 403);
});

t.test('writes that do not change access leave the cache warm', async (t) => {
  // A principal reloaded on every request would pass every test above: this one shows the cache stays.
  const a = await makeTenant(db);
  await warm(t, a.key, a.organization.id);
  // Removed behind the cache's back with the trigger switched off for this transaction alone: a cached
  // principal still answers, so the answers above came from invalidation, not from a cold cache.
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local session_replication_role = replica`);
    await tx.update(users).set({ is_active: false }).where(eq(users.id, a.user.id));
  });
  t.equal(await status(a.key, a.organization.id), 200, 'a cached principal is served without a query');
});

t.test("a project's new timezone, which the principal carries, holds on the next query", async (t) => {
  const a = await makeTenant(db);
  const day = async () => {
    const res = await call('query_create', {
      key: a.key,
      params: { project_id: a.project.id },
      body: { query: { kind: 'HogQLQuery', query: "select toDate(toDateTime('2024-03-10T03:00:00Z'))" } },
    });
    t.equal(res.status, 200);
    return res.body.results;
  };
  const zone = (timezone: string) =>
    call('organizations_projects_partial_update', {
      key: a.key,
      params: { organization_id: a.organization.id, id: a.project.id },
      body: { timezone },
    });
  t.same(await day(), [['2024-03-10']], 'in UTC, with the key cached');
  t.equal((await zone('America/New_York')).status, 200);
  t.same(await day(), [['2024-03-09']], "New York's day at once");
  // The same zone written back changes nothing, and clears nothing: shown as in the test above.
  t.equal((await zone('America/New_York')).status, 200);
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local session_replication_role = replica`);
    await tx.update(users).set({ is_active: false }).where(eq(users.id, a.user.id));
  });
  t.same(await day(), [['2024-03-09']], 'the cached principal is still served');
});

t.test('no handler invalidates the auth cache by hand', async (t) => {
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (
        path.endsWith('.ts') &&
        !path.startsWith(join('src', 'auth')) &&
        /\.invalidate\(/.test(readFileSync(path, 'utf8'))
      )
        offenders.push(path);
    }
  };
  walk('src');
  t.same(
    offenders.filter((p) => p !== join('src', 'cli', 'index.ts')),
    [],
    'only the cache (and the CLI) call it',
  );
});
