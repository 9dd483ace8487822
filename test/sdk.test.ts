// A third-party client built from the contract, the way an SDK user would: openapi-typescript types
// (regenerated here and compared with generated/api.d.ts) driving openapi-fetch against the live
// server on a real socket. The calls below are type-checked against the contract by `tsc`.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import createClient from 'openapi-fetch';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import t from 'tap';
import type { paths } from '../generated/api.js';
import { specPath } from '../src/http/spec.js';
import { buildTestApp } from './helpers/app.js';
import { makeTenant } from './helpers/factories.js';

t.test('the typed client is exactly what the contract generates', async (t) => {
  const ast = await openapiTS(JSON.parse(readFileSync(specPath, 'utf8')), { silent: true });
  const fresh = COMMENT_HEADER + astToString(ast);
  t.equal(
    fresh,
    readFileSync(new URL('../generated/api.d.ts', import.meta.url), 'utf8'),
    'generated/api.d.ts is current',
  );
});

t.test('a scenario across tags through openapi-fetch against the live server', async (t) => {
  const ctx = await buildTestApp(t);
  const owner = await makeTenant(ctx.db);
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  // JSON answers, as a client of PostHog's own schema picks them: dashboards also answer text/event-stream.
  const client = (key: string) =>
    createClient<paths, 'application/json'>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });
  const api = client(owner.key);

  const org = await api.POST('/api/organizations/', { body: { name: 'SDK Analytics' } });
  t.equal(org.response.status, 201);
  t.equal(org.data?.name, 'SDK Analytics');
  const orgId = org.data!.id;

  const project = await api.POST('/api/projects/', { body: { name: 'SDK project', timezone: 'Europe/Berlin' } });
  t.equal(project.response.status, 201);
  t.equal(project.data?.organization, orgId, 'created in the new current organization');
  const projectId = project.data!.id;

  const me = await api.GET('/api/users/{uuid}/', { params: { path: { uuid: '@me' } } });
  t.equal(me.data?.organization?.id, orgId, 'the new organization is current');
  t.equal(me.data?.team?.organization, orgId, 'and so is a project of it');

  const created = await api.POST('/api/personal_api_keys/', {
    body: { label: 'dashboards only', scopes: ['dashboard:write', 'project:read'], scoped_organizations: [orgId] },
  });
  t.equal(created.response.status, 201);
  t.match(created.data?.value, /^phx_/);
  const readBack = await api.GET('/api/personal_api_keys/{id}/', { params: { path: { id: created.data!.id } } });
  t.same(readBack.data?.scopes, ['dashboard:write', 'project:read']);
  t.same(readBack.data?.scoped_organizations, [orgId]);
  t.notOk(readBack.data && 'value' in readBack.data && readBack.data.value, 'the value is never read back');

  const limited = client(created.data!.value!);
  const refused = await limited.GET('/api/organizations/{id}/', { params: { path: { id: orgId } } });
  t.equal(refused.response.status, 403);
  t.same(refused.error, {
    type: 'authentication_error',
    code: 'permission_denied',
    detail: "API key missing required scope 'organization:read'",
    attr: null,
  });
  const outside = await limited.GET('/api/projects/{id}/', { params: { path: { id: String(owner.project.id) } } });
  t.equal(outside.response.status, 403, 'the scoped key cannot reach the first organization');

  const readProject = await limited.GET('/api/projects/{id}/', { params: { path: { id: String(projectId) } } });
  t.equal(readProject.data?.name, 'SDK project');
  t.equal(readProject.data?.timezone, 'Europe/Berlin');

  const dashboard = await limited.POST('/api/projects/{project_id}/dashboards/', {
    params: { path: { project_id: String(projectId) } },
    body: { name: 'Made by an SDK', tags: ['sdk'] },
  });
  t.equal(dashboard.response.status, 201);
  const fetched = await limited.GET('/api/projects/{project_id}/dashboards/{id}/', {
    params: { path: { project_id: String(projectId), id: dashboard.data!.id } },
  });
  t.equal(fetched.data?.name, 'Made by an SDK');
  t.same(fetched.data?.tags, ['sdk']);
  const listed = await limited.GET('/api/projects/{project_id}/dashboards/', {
    params: { path: { project_id: String(projectId) }, query: { limit: 10 } },
  });
  t.equal(listed.data?.count, 1);
  t.equal(listed.data?.results[0]?.id, dashboard.data!.id);

  const invalid = await limited.POST('/api/projects/{project_id}/dashboards/', {
    params: { path: { project_id: String(projectId) } },
    body: { name: 'x'.repeat(401) },
  });
  t.equal(invalid.response.status, 400);
  t.match(invalid.error, { type: 'validation_error', attr: 'name' });
});
