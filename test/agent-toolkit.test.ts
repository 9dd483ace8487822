// @posthog/agent-toolkit, PostHog's own client for AI agents, against this server with a key made
// the usual way: it finds its tools, and its organization, project, dashboard and taxonomy tools
// answer from this server's data, and its query-run tool runs SQL (a DataVisualizationNode) here. (Its
// insight, flag, experiment and survey tools need resources this server does not have; its docs search
// and natural-language query call a third party and are never run here.)
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
