// The route to distributing the database by tenant (Citus, docs/scaling.md): every statement the app
// sends on a tenant table names that table's tenant key (its project or organization). The statements
// are the ones the app's pools send while every operation of the contract is called by an owner, events
// are captured and queried, and the throttles count; each is checked for the key of every tenant table it
// names. The few that must cross tenants are listed with the reason.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { rowsOf } from '../../src/db/queries/util.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { exampleBody, Fixtures } from '../helpers/fixtures.js';
import { fillPath, operations } from '../helpers/spec-ops.js';

let recording = false;
const statements = new Map<string, number>();
const ctx = await buildTestApp(t, { rateLimits: true }, (text) => {
  if (recording) statements.set(text, (statements.get(text) ?? 0) + 1);
});
const { db, app } = ctx;
const owner = await makeTenant(db);

/** Tables of the schema with a tenant key (a project_id, team_id or organization_id column), and those keys. */
const keyed = rowsOf<{ table: string; keys: string[] }>(
  await db.execute(sql`
    select table_name as table, array_agg(column_name::text order by column_name) as keys
    from information_schema.columns
    where table_schema = 'public' and column_name in ('project_id', 'team_id', 'organization_id')
    group by table_name`),
);
const TENANT_KEYS = new Map(keyed.map((r) => [r.table, r.keys]));
// A project's and an organization's own rows are keyed by their id.
TENANT_KEYS.set('projects', ['organization_id', 'id']);
TENANT_KEYS.set('organizations', ['id']);

const NOT_ALIAS = new RegExp(
  '^(where|on|inner|left|right|full|cross|join|set|values|select|group|order|limit|using|as|returning|for|' +
    'union|natural|default|lateral|with|having|offset)$',
  'i',
);

/** The tables a statement reads or writes, each with the names it goes by in the statement (itself, an alias). */
function tablesOf(text: string): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const ref = new RegExp(
    '\\b(?:from|join|update|into)\\s+(?:only\\s+)?(?:"?public"?\\.)?"?([a-z_][a-z0-9_]*)"?' +
      '(?:\\s+(?:as\\s+)?"?([a-z_][a-z0-9_]*)"?)?',
    'gi',
  );
  for (const m of text.matchAll(ref)) {
    const table = m[1]!.toLowerCase();
    const names = found.get(table) ?? new Set([table]);
    if (m[2] && !NOT_ALIAS.test(m[2])) names.add(m[2].toLowerCase());
    found.set(table, names);
  }
  return found;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether `text` filters (or, writing, sets) `table`'s tenant key: the key compared, qualified by one of
 * the table's names (unqualified where the statement names one table), or the key among an insert's columns.
 */
function namesKey(text: string, table: string, names: Set<string>, single: boolean): boolean {
  const keys = TENANT_KEYS.get(table)!;
  return keys.some((key) => {
    const k = `"?${esc(key)}"?`;
    const qualified = [...names].map((n) => `"?${esc(n)}"?\\.${k}`).join('|');
    const compared = `(${qualified}${single ? `|(?<![."a-z_])${k}` : ''})\\s*(=|in\\s*\\(|is\\s+not\\s+distinct)`;
    const inserted = new RegExp(`insert\\s+into\\s+"?${esc(table)}"?[^(]*\\([^)]*\\b${esc(key)}\\b`, 'i');
    return new RegExp(compared, 'i').test(text) || inserted.test(text);
  });
}

t.test('every statement on a tenant table names its tenant key', async (t) => {
  t.ok(TENANT_KEYS.size >= 20, `${TENANT_KEYS.size} tenant tables: ${[...TENANT_KEYS.keys()].sort().join(', ')}`);
  await representativeRun();
  /**
   * Statements that do not name a tenant key of every tenant table they touch, by design: each with why
   * it may (and what it means for a distributed database, docs/scaling.md).
   */
  const ACROSS_TENANTS: { pattern: RegExp; reason: string }[] = [
    {
      pattern: /"plugins"\."is_global" = \$\d+/,
      reason:
        "PostHog's global plugins are visible to every organization; the plugin_configs of the subquery are " +
        "scoped through their project's organization (projects.organization_id), and `unused` asks whether any " +
        'project enables the plugin at all (plugins would be a reference table)',
    },
    {
      pattern:
        /^select .* from "plugin_configs" inner join "projects" on .* where \("projects"\."organization_id" = \$1/,
      reason: "an organization route's plugin configs: scoped by organization through the config's project",
    },
    {
      pattern: /^select .* from "plugins" left join "organizations" on .* where "plugins"\."id" (= \$1 limit|in \()/,
      reason:
        'the plugins of configs already loaded in the scope (a global plugin belongs to another organization or ' +
        'none); plugins and organizations would be reference tables',
    },
    {
      pattern:
        /from "organization_memberships" inner join "organizations" .* where "organization_memberships"\."user_id" = /,
      reason: "a caller's memberships across organizations: the principal is a user, who may belong to several",
    },
    {
      pattern: /^select "projects"\."id", "projects"\."name", .* where "projects"\."api_token" = \$1/,
      reason:
        'ingestion finds its project by the api_token, the only thing an SDK sends: the lookup that yields the key ' +
        '(api_token is unique; projects would be a reference table)',
    },
    {
      pattern: /^insert into "projects" .*from organizations where id = \$\d+\)/,
      reason: "a new project copies its organization's defaults, reading that organization by its id",
    },
  ];

  const violations = new Map<string, string[]>();
  for (const text of statements.keys()) {
    const tables = tablesOf(text);
    const tenantTables = [...tables.keys()].filter((name) => TENANT_KEYS.has(name));
    if (ACROSS_TENANTS.some((a) => a.pattern.test(text.replace(/\s+/g, ' ')))) continue;
    for (const table of tenantTables) {
      if (!namesKey(text, table, tables.get(table)!, tenantTables.length === 1)) {
        violations.set(text, [...(violations.get(text) ?? []), table]);
      }
    }
  }
  t.ok(statements.size > 100, `${statements.size} distinct statements recorded`);
  t.same(
    [...violations].map(([text, tables]) => `${tables.join(', ')}: ${text.replace(/\s+/g, ' ')}`),
    [],
    'every statement on a tenant table names its key (or is listed with its reason)',
  );
  const sent = [...statements.keys()].map((s) => s.replace(/\s+/g, ' '));
  const unused = ACROSS_TENANTS.filter((a) => !sent.some((s) => a.pattern.test(s)));
  t.same(unused, [], 'every listed exception is still sent (else take it off the list)');
  t.ok(
    sent.some((s) => /from "?events"?/i.test(s)),
    'the run read events',
  );
  // Ingestion writes through one SQL function (drizzle/0008 and later) whose first argument is the project:
  // under Citus, a function distributed by that argument.
  t.ok(
    sent.some((s) => /select ingest_plain_batch\(\$1::int/.test(s)),
    'and wrote them through ingest_plain_batch, the project its first argument',
  );
});

/** Every tenant operation of the contract, called by the tenant's owner. */
async function representativeRun(): Promise<void> {
  recording = true;
  const fixtures = new Fixtures(ctx, owner);
  for (const op of operations.filter((o) => o.tenant && o.scope)) {
    const values = await fixtures.pathValues(op, op.method === 'DELETE');
    const body = ['POST', 'PUT', 'PATCH'].includes(op.method) ? exampleBody(op) : undefined;
    const res = await app.inject({
      method: op.method as 'GET',
      url: fillPath(op.path, values),
      headers: {
        authorization: `Bearer ${owner.key}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    if (res.statusCode >= 300 || op.method !== 'GET') fixtures.forget();
  }
  // Ingestion, the events listing, a HogQL aggregate and an insight kind, besides the contract's examples.
  const auth = { authorization: `Bearer ${owner.key}` };
  const batch = [1, 2, 3].map((i) => ({ event: 'signup', distinct_id: `u${i}`, properties: { plan: 'free' } }));
  await app.inject({ method: 'POST', url: '/batch/', payload: { api_key: owner.project.api_token, batch } });
  const base = `/api/projects/${owner.project.id}`;
  const properties = JSON.stringify([{ key: 'plan', value: 'free', operator: 'exact', type: 'event' }]);
  await app.inject({
    method: 'GET',
    url: `${base}/events/?properties=${encodeURIComponent(properties)}`,
    headers: auth,
  });
  for (const query of [
    { kind: 'HogQLQuery', query: 'select event, count() from events group by event' },
    { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'signup' }], dateRange: { date_from: '-7d' } },
  ]) {
    await app.inject({ method: 'POST', url: `${base}/query/`, headers: auth, payload: { query } });
  }
  recording = false;
}
