// @posthog/agent-toolkit, PostHog's own client for AI agents, against this server with a key made
// the usual way: it finds its tools, and its organization, project, dashboard and taxonomy tools
// answer from this server's data, its query-run tool runs SQL (a DataVisualizationNode) here, and its
// insight tools create, list, read, run, update, put on a dashboard and delete insights. (Its flag,
// experiment and survey tools need resources this server does not have; its docs search and
// natural-language query call a third party and are never run here.)
import type { AddressInfo } from 'node:net';
import { PostHogAgentToolkit } from '@posthog/agent-toolkit/integrations/ai-sdk';
import t from 'tap';
import { buildTestApp } from './helpers/app.js';
import { capture } from './helpers/events.js';
import { makeTenant } from './helpers/factories.js';

const ctx = await buildTestApp(t);
await ctx.app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;

type Tools = Awaited<ReturnType<PostHogAgentToolkit['getTools']>>;

/** Runs one tool as an agent would and returns what it read, parsed. */
async function run(tools: Tools, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const tool = tools[name];
  if (!tool?.execute) throw new Error(`no tool ${name}`);
  const result = (await tool.execute(args, { toolCallId: name, messages: [] })) as {
    content: { type: string; text: string }[];
  };
  const text = result.content[0]!.text;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${name} answered ${text}`);
  }
}

t.test('its tools work against this server', async (t) => {
  const a = await makeTenant(ctx.db);
  const b = await makeTenant(ctx.db);
  // A key created through the API without any scoping, as a person would make it.
  const created = await ctx.call('personal_api_keys_create', { key: a.key, body: { label: 'agent', scopes: ['*'] } });
  await capture(ctx, a.project.api_token, [
    { event: 'purchase', distinct_id: 'u1', properties: { amount: 12, plan: 'pro' } },
    { event: '$pageview', distinct_id: 'u1', properties: { $current_url: 'https://shop.example' } },
  ]);
  await capture(ctx, b.project.api_token, [{ event: 'their_event', distinct_id: 'x', properties: { their_prop: 1 } }]);

  const toolkit = new PostHogAgentToolkit({ posthogPersonalApiKey: created.body.value, posthogApiBaseUrl: base });
  const tools = await toolkit.getTools();
  for (const name of [
    'organizations-get',
    'projects-get',
    'dashboards-get-all',
    'dashboard-create',
    'event-definitions-list',
    'properties-list',
    'query-run',
  ]) {
    t.ok(tools[name], `getTools offers ${name}`);
  }

  const orgs = await run(tools, 'organizations-get');
  t.same(
    orgs.map((o: { id: string }) => o.id),
    [a.organization.id],
    'only the caller’s organization',
  );
  const details = await run(tools, 'organization-details-get');
  t.match(details, { id: a.organization.id, name: a.organization.name });
  const projects = await run(tools, 'projects-get');
  t.same(
    projects.map((p: { id: number }) => p.id),
    [a.project.id],
    "the organization's projects",
  );

  const dashboard = await run(tools, 'dashboard-create', {
    data: { name: 'Revenue', description: 'Money', tags: ['Sales'] },
  });
  t.match(dashboard, { name: 'Revenue' });
  const listed = await ctx.call('dashboards_list', { key: a.key, params: { project_id: a.project.id } });
  t.same(
    listed.body.results.map((d: { name: string }) => d.name),
    ['Revenue'],
    'the dashboard was stored in the project',
  );
  const all = await run(tools, 'dashboards-get-all');
  t.same(
    all.map((d: { name: string }) => d.name),
    ['Revenue'],
  );

  const events = await run(tools, 'event-definitions-list');
  t.same(events.map((e: { name: string }) => e.name).sort(), ['$pageview', 'purchase']);
  const props = await run(tools, 'properties-list', { type: 'event', eventName: 'purchase' });
  t.same(props, [
    { name: 'amount', property_type: 'Numeric' },
    { name: 'plan', property_type: 'String' },
  ]);
  const core = await run(tools, 'properties-list', {
    type: 'event',
    eventName: '$pageview',
    includePredefinedProperties: true,
  });
  t.ok(
    core.some((p: { name: string }) => p.name === '$current_url'),
    'predefined properties on request',
  );
  t.notOk(JSON.stringify([events, props, core]).includes('their_'), "another organization's taxonomy never shows");

  // query-run sends its SQL as a DataVisualizationNode to /api/environments/{id}/query/ and reads `results`.
  const sqlRows = await run(tools, 'query-run', {
    query: {
      kind: 'DataVisualizationNode',
      source: { kind: 'HogQLQuery', query: 'select event, count() from events group by event order by event' },
    },
  });
  t.same(
    sqlRows,
    [
      ['$pageview', 1],
      ['purchase', 1],
    ],
    'query-run answers from the project’s events only',
  );
});

t.test("its insight tools work against this server, within the key's project", async (t) => {
  const a = await makeTenant(ctx.db);
  const b = await makeTenant(ctx.db);
  const created = await ctx.call('personal_api_keys_create', { key: a.key, body: { label: 'agent', scopes: ['*'] } });
  await capture(ctx, a.project.api_token, [
    { event: 'purchase', distinct_id: 'u1' },
    { event: 'purchase', distinct_id: 'u2' },
    { event: '$pageview', distinct_id: 'u1' },
  ]);
  await capture(ctx, b.project.api_token, [{ event: 'purchase', distinct_id: 'x' }]);
  const theirs = await ctx.call('insights_create', {
    key: b.key,
    params: { project_id: b.project.id },
    body: {
      name: 'Theirs',
      query: { kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query: 'select 1' } },
    },
  });
  const tools = await new PostHogAgentToolkit({
    posthogPersonalApiKey: created.body.value,
    posthogApiBaseUrl: base,
  }).getTools();
  for (const name of [
    'insight-create-from-query',
    'insights-get-all',
    'insight-get',
    'insight-query',
    'insight-update',
    'insight-delete',
    'add-insight-to-dashboard',
  ])
    t.ok(tools[name], `getTools offers ${name}`);

  const sql = "select count() from events where event = 'purchase'";
  const made = await run(tools, 'insight-create-from-query', {
    data: {
      name: 'Purchases',
      description: 'How many',
      favorited: true,
      query: { kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query: sql } },
    },
  });
  t.match(made, { name: 'Purchases', description: 'How many', favorited: true, short_id: /^[A-Za-z0-9]{8}$/ });
  const stored = await ctx.call('insights_retrieve', { key: a.key, params: { project_id: a.project.id, id: made.id } });
  t.equal(stored.status, 200, 'stored in the key’s project');

  const listed = await run(tools, 'insights-get-all', { data: { search: 'Purch' } });
  t.same(
    listed.map((i: { id: number }) => i.id),
    [made.id],
    "the project's insights only, by search",
  );
  t.equal((await run(tools, 'insight-get', { insightId: String(made.id) })).name, 'Purchases');
  t.equal((await run(tools, 'insight-get', { insightId: made.short_id })).id, made.id, 'by short_id too');
  const ran = await run(tools, 'insight-query', { insightId: made.short_id });
  t.same(ran.results, [[2]], "its query run here: two purchases of A's, none of B's");

  const trends = {
    kind: 'InsightVizNode',
    source: { kind: 'TrendsQuery', series: [{ kind: 'EventsNode', event: 'purchase', math: 'total' }] },
  };
  const updated = await run(tools, 'insight-update', {
    insightId: made.short_id,
    data: { name: 'Purchases by day', query: trends },
  });
  t.match(updated, { id: made.id, name: 'Purchases by day', query: { kind: 'InsightVizNode' } });
  const series = await run(tools, 'insight-query', { insightId: String(made.id) });
  t.equal(series.results[0].count, 2, 'an InsightVizNode is run as its TrendsQuery source: two purchases');

  const dashboard = await run(tools, 'dashboard-create', { data: { name: 'Sales' } });
  const added = await run(tools, 'add-insight-to-dashboard', {
    data: { insightId: made.short_id, dashboardId: dashboard.id },
  });
  t.same(added.dashboards, [dashboard.id]);
  const shown = await ctx.call('dashboards_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, id: dashboard.id },
  });
  t.same(
    (shown.body.tiles as unknown as { insight: { id: number } | null }[]).map((tile) => tile.insight?.id),
    [made.id],
    'the dashboard shows it as a tile',
  );

  // Another project's insight is not there for this key.
  await t.rejects(run(tools, 'insight-get', { insightId: String(theirs.body.id) }), 'insight-get: not found');
  await t.rejects(
    run(tools, 'add-insight-to-dashboard', { data: { insightId: String(theirs.body.id), dashboardId: dashboard.id } }),
  );
  await t.rejects(run(tools, 'insight-delete', { insightId: String(theirs.body.id) }));
  const still = await ctx.call('insights_retrieve', {
    key: b.key,
    params: { project_id: b.project.id, id: theirs.body.id },
  });
  t.same([still.status, still.body.deleted], [200, false], "B's insight is untouched");

  t.match(await run(tools, 'insight-delete', { insightId: made.short_id }), { success: true });
  const gone = await ctx.call('insights_retrieve', { key: a.key, params: { project_id: a.project.id, id: made.id } });
  t.equal(gone.status, 404, 'deleted');
});
