import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { capture } from '../helpers/events.js';
import { ctx, call, db, seeded } from '../helpers/event-definitions-app.js';

t.test('event_definitions_metrics_retrieve', async (t) => {
  const { tenant, id } = await seeded();
  const other = await seeded();
  const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
  await capture(ctx, tenant.project.api_token, [
    { event: 'signed up', distinct_id: 'e' },
    { event: 'signed up', distinct_id: 'f', timestamp: old },
  ]);
  const params = { project_id: tenant.project.id, id: id('signed up') };
  const res = await call('event_definitions_metrics_retrieve', { key: tenant.key, params });
  t.same(
    res.body,
    { query_usage_30_day: null, volume_30_day: 2 },
    'events older than 30 days and other projects’ events do not count',
  );
  const cross = await call('event_definitions_metrics_retrieve', {
    key: tenant.key,
    params: { project_id: tenant.project.id, id: other.id('signed up') },
  });
  t.equal(cross.status, 404);
  t.equal(
    (
      await call('event_definitions_metrics_retrieve', {
        key: tenant.key,
        params: { project_id: other.tenant.project.id, id: other.id('signed up') },
      })
    ).status,
    403,
  );
  t.equal((await call('event_definitions_metrics_retrieve', { params })).status, 401);
  t.equal(
    (
      await call('event_definitions_metrics_retrieve', {
        key: await makeKey(db, tenant.user, ['dashboard:read']),
        params,
      })
    ).status,
    403,
  );
});

t.test('event_definitions_typescript_retrieve: a module that type-checks against posthog-js', async (t) => {
  const { tenant } = await seeded();
  const other = await makeTenant(db);
  await capture(ctx, other.project.api_token, [{ event: 'their event', distinct_id: 'x' }]);
  const params = { project_id: tenant.project.id };
  const res = await call('event_definitions_typescript_retrieve', { key: tenant.key, params });
  t.equal(res.status, 200);
  t.match(res.body, { event_count: 3, generator_version: '1.0.0', schema_hash: /^[0-9a-f]{32}$/ });
  const entry = (name: string) => `"${name.replace('$', '\\$')}": Record<string, any>\\n`;
  t.match(
    res.body.content,
    new RegExp([entry('$pageview'), entry('Purchase Completed'), entry('signed up')].join(' {2}')),
  );
  t.notMatch(res.body.content, /\$autocapture|their event/, 'other PostHog events and other projects stay out');
  const again = await call('event_definitions_typescript_retrieve', { key: tenant.key, params });
  t.equal(again.body.schema_hash, res.body.schema_hash, 'the hash does not move without a change');
  await capture(ctx, tenant.project.api_token, [{ event: 'logged out', distinct_id: 'd' }]);
  const more = await call('event_definitions_typescript_retrieve', { key: tenant.key, params });
  t.not(more.body.schema_hash, res.body.schema_hash);

  // The module and a use of it compile together under strict settings against the installed posthog-js.
  const dir = mkdtempSync(join(process.cwd(), '.tap', 'typescript-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'posthog-typed.ts'), more.body.content);
  writeFileSync(
    join(dir, 'use.ts'),
    [
      "import posthog from './posthog-typed'",
      "posthog.capture('signed up', { plan: 'pro' })",
      "posthog.capture('logged out')",
      "posthog.capture('not defined yet', { any: 1 })",
      "posthog.captureRaw('anything')",
      'declare const name: string',
      '// @ts-expect-error a plain string is not a known event name',
      'posthog.capture(name)',
    ].join('\n'),
  );
  const program = ts.createProgram([join(dir, 'use.ts')], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    esModuleInterop: true,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2020,
  });
  const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  t.same(errors, [], 'no type errors');

  t.equal((await call('event_definitions_typescript_retrieve', { params })).status, 401);
  t.equal(
    (await call('event_definitions_typescript_retrieve', { key: tenant.key, params: { project_id: other.project.id } }))
      .status,
    403,
  );
  t.equal(
    (
      await call('event_definitions_typescript_retrieve', {
        key: await makeKey(db, tenant.user, ['dashboard:read']),
        params,
      })
    ).status,
    403,
  );
});
