// The insights API: create, list with PostHog's filters, retrieve, update, soft delete, scopes, tenant walls.
import t from 'tap';
import { buildTestApp, json } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { checkPosthogInsight, trendsQuery } from './helpers.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const params = { project_id: a.project.id };

async function create(body: Record<string, unknown>, key = a.key, project_id = a.project.id) {
  return call('insights_create', { key, params: { project_id }, body: body as never });
}

t.test('create, retrieve and PostHog fields', async (t) => {
  const res = await create({ name: 'Views', query: trendsQuery(), tags: [' Growth ', 'growth', 'KPI'], saved: true });
  t.equal(res.status, 201);
  const made = json<'insights_create'>(res);
  checkPosthogInsight(t, made as never);
  t.match(made.short_id, /^[A-Za-z0-9]{8}$/);
  t.same(made.tags, ['growth', 'kpi']);
  t.equal(made.created_by?.id, a.user.id);
  t.equal(made.last_modified_by?.id, a.user.id);
  t.same(made.dashboards, []);
  t.equal(made.result, null, 'a create computes nothing');
  t.equal(made.is_cached, false);
  t.same(made.query, trendsQuery());
  t.equal(made.effective_privilege_level, 37);
  const got = await call('insights_retrieve', { key: a.key, params: { ...params, id: made.id } });
  t.equal(got.status, 200);
  t.equal(got.body.short_id, made.short_id);
  t.equal(got.body.result, null, 'a plain read serves the cache only');
  checkPosthogInsight(t, got.body as never);
  const twin = await ctx.inject({
    method: 'GET',
    url: `/api/environments/${a.project.id}/insights/${made.id}/`,
    headers: { authorization: `Bearer ${a.key}` },
  });
  t.equal(twin.statusCode, 200);
  t.equal(twin.json().short_id, made.short_id);
});

t.test('bad queries are 400s naming the field', async (t) => {
  const cases: [unknown, string | null, string][] = [
    [{ kind: 'NoSuchQuery' }, 'query__kind', 'invalid_choice'],
    [{ kind: 'InsightVizNode', source: { kind: 'Nope' } }, 'query__source__kind', 'invalid_choice'],
    [{ kind: 'InsightVizNode' }, 'query__source', 'required'],
    [{ kind: 'InsightVizNode', source: { kind: 'TrendsQuery' } }, 'query__source__series', 'required'],
    [
      { kind: 'InsightVizNode', source: { kind: 'PathsQuery', pathsFilter: { pathsHogQLExpression: 'event ||' } } },
      'query__source__pathsFilter__pathsHogQLExpression',
      'hogql_syntax_error',
    ],
    [{ kind: 'HogQLQuery', query: 'select nope(' }, 'query', 'hogql_syntax_error'],
    [{ kind: 'HogQLQuery', query: 'select no_such_field from events' }, 'query', ''],
    [{ kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query: '' } }, 'query__source__query', 'blank'],
    [{ nokind: true }, 'query__kind', 'required'],
  ];
  for (const [query, attr, code] of cases) {
    const res = await create({ name: 'bad', query });
    t.equal(res.status, 400, JSON.stringify(query));
    t.equal(res.body.type, 'validation_error');
    t.equal(res.body.attr, attr, `attr of ${JSON.stringify(query)}`);
    if (code) t.equal(res.body.code, code);
  }
  const { count } = json<'insights_list'>(
    await call('insights_list', { key: a.key, params, query: { search: 'bad' } }),
  );
  t.equal(count, 0, 'nothing saved');
});

t.test('list filters', async (t) => {
  const mk = async (body: Record<string, unknown>) => json<'insights_create'>(await create(body));
  const d1 = json<'dashboards_create'>(await call('dashboards_create', { key: a.key, params, body: { name: 'D1' } }));
  const d2 = json<'dashboards_create'>(await call('dashboards_create', { key: a.key, params, body: { name: 'D2' } }));
  const other = await makeMember(db, a, 1);
  const i1 = await mk({ name: 'Filter alpha', query: trendsQuery(), saved: true, favorited: true, tags: ['x'] });
  const i2 = await mk({
    name: 'Filter beta',
    description: 'about ALPHA',
    query: trendsQuery(),
    dashboards: [d1.id, d2.id],
  });
  const i3 = json<'insights_create'>(
    await create({ name: 'Filter gamma', query: trendsQuery(), dashboards: [d1.id], tags: ['y'] }, other.key),
  );
  const ids = async (query: Record<string, string | number | boolean | string[]>) =>
    json<'insights_list'>(await call('insights_list', { key: a.key, params, query: { basic: true, ...query } }))
      .results.map((r) => r.id)
      .sort();
  t.same(await ids({ search: 'filter alpha' }), [i1.id]);
  t.same(await ids({ search: 'alpha' }), [i1.id, i2.id], 'name or description');
  t.same(await ids({ search: 'Filter', saved: true }), [i1.id, i2.id, i3.id], 'saved, or on a dashboard');
  t.same(await ids({ search: 'Filter', saved: false }), [i2.id, i3.id]);
  t.same(await ids({ search: 'Filter', favorited: true }), [i1.id]);
  t.same(await ids({ short_id: i3.short_id }), [i3.id]);
  t.same(await ids({ short_id: `${i3.short_id}-and-more` }), [], 'any text is a short id to match, as PostHog');
  t.same(await ids({ search: 'Filter', created_by: other.user.id }), [i3.id]);
  t.same(await ids({ dashboards: `[${d1.id}]` }), [i2.id, i3.id]);
  t.same(await ids({ dashboards: `[${d1.id},${d2.id}]` }), [i2.id], 'on every dashboard named');
  t.same(await ids({ tags: ['y', 'x'] }), [i1.id, i3.id]);
  const bad = await call('insights_list', { key: a.key, params, query: { dashboards: 'x' } });
  t.equal(bad.status, 400);
  t.equal(bad.body.attr, 'dashboards');
  const full = json<'insights_list'>(
    await call('insights_list', { key: a.key, params, query: { short_id: i2.short_id } }),
  );
  t.same(full.results[0]!.dashboards.sort(), [d1.id, d2.id].sort());
  t.same(full.results[0]!.dashboard_tiles.map((x) => x.dashboard_id).sort(), [d1.id, d2.id].sort());
});

t.test('update, dashboards, soft delete and DELETE', async (t) => {
  const d1 = json<'dashboards_create'>(await call('dashboards_create', { key: a.key, params, body: { name: 'U1' } }));
  const made = json<'insights_create'>(await create({ name: 'Before', query: trendsQuery(), dashboards: [d1.id] }));
  const id = made.id;
  const patched = await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id },
    body: { name: 'After', dashboards: [] },
  });
  t.equal(patched.status, 200);
  t.equal(patched.body.name, 'After');
  t.same(patched.body.dashboards, []);
  t.ok(patched.body.last_modified_at >= made.last_modified_at);
  const put = await call('insights_update', {
    key: a.key,
    params: { ...params, id },
    body: { dashboards: [d1.id], favorited: true },
  });
  t.same(put.body.dashboards, [d1.id], 'the removed tile comes back');
  t.equal(put.body.name, 'After', 'PUT keeps what it leaves out');
  const bad = await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id },
    body: { query: { kind: 'X' } },
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.attr, 'query__kind');
  const del = await call('insights_destroy', { key: a.key, params: { ...params, id } });
  t.equal(del.status, 405);
  t.equal(del.raw, '');
  const soft = await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id },
    body: { deleted: true },
  });
  t.equal(soft.status, 200);
  t.equal(soft.body.deleted, true);
  t.same(soft.body.dashboards, [], 'deleting takes it off its dashboards');
  t.equal((await call('insights_retrieve', { key: a.key, params: { ...params, id } })).status, 404);
  const back = await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id },
    body: { deleted: false },
  });
  t.equal(back.status, 200);
  t.equal(back.body.deleted, false);
});

t.test('scopes and restriction levels', async (t) => {
  const made = json<'insights_create'>(await create({ name: 'Scoped', query: trendsQuery() }));
  const readOnly = await makeKey(db, a.user, ['insight:read']);
  const none = await makeKey(db, a.user, ['dashboard:read']);
  t.equal((await call('insights_retrieve', { key: readOnly, params: { ...params, id: made.id } })).status, 200);
  const w = await call('insights_partial_update', {
    key: readOnly,
    params: { ...params, id: made.id },
    body: { name: 'x' },
  });
  t.equal(w.status, 403);
  t.equal(w.body.detail, "API key missing required scope 'insight:write'");
  t.equal((await call('insights_list', { key: none, params })).status, 403);
  t.equal((await call('insights_list', { params })).status, 401);
  // On a dashboard restricted to collaborators, a member who is not one may only view it.
  const locked = json<'dashboards_create'>(
    await call('dashboards_create', { key: a.key, params, body: { name: 'Locked', restriction_level: 37 } }),
  );
  await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id: made.id },
    body: { dashboards: [locked.id] },
  });
  const member = await makeMember(db, a, 1);
  const seen = await call('insights_retrieve', { key: member.key, params: { ...params, id: made.id } });
  t.equal(seen.body.effective_restriction_level, 37);
  t.equal(seen.body.effective_privilege_level, 21);
  const edit = await call('insights_partial_update', {
    key: member.key,
    params: { ...params, id: made.id },
    body: { name: 'no' },
  });
  t.equal(edit.status, 403);
  const add = await create({ name: 'mine', query: trendsQuery(), dashboards: [locked.id] }, member.key);
  t.equal(add.status, 403);
  t.equal(add.body.detail, `You don't have permission to add insights to dashboard: ${locked.id}`);
});

t.test('tenant walls', async (t) => {
  const mine = json<'insights_create'>(await create({ name: 'Walled', query: trendsQuery() }));
  const theirs = json<'dashboards_create'>(
    await call('dashboards_create', { key: b.key, params: { project_id: b.project.id }, body: { name: 'B' } }),
  );
  const bParams = { project_id: b.project.id, id: mine.id };
  t.equal((await call('insights_retrieve', { key: b.key, params: bParams })).status, 404);
  t.equal((await call('insights_partial_update', { key: b.key, params: bParams, body: { name: 'x' } })).status, 404);
  t.equal((await call('insights_retrieve', { key: b.key, params: { ...params, id: mine.id } })).status, 403);
  const cross = await create({ name: 'cross', query: trendsQuery(), dashboards: [theirs.id] });
  t.equal(cross.status, 400);
  t.same(cross.body, { type: 'validation_error', code: 'invalid', detail: 'Dashboard not found', attr: null });
  const patch = await call('insights_partial_update', {
    key: a.key,
    params: { ...params, id: mine.id },
    body: { dashboards: [theirs.id] },
  });
  t.equal(patch.status, 400);
  const missing = await create({ name: 'missing', query: trendsQuery(), dashboards: [999999] });
  t.equal(missing.status, 400);
  t.equal(missing.body.attr, 'dashboards');
  const list = json<'insights_list'>(await call('insights_list', { key: b.key, params: { project_id: b.project.id } }));
  t.equal(list.count, 0);
});

/** RFC 4180 text as rows of cells (quoted cells may hold commas, quotes and line breaks). */
function csvCells(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (quoted || (c !== ',' && c !== '\r')) {
      cell += c;
    } else if (c === ',') {
      row.push(cell);
      cell = '';
    } else {
      rows.push([...row, cell]);
      row = [];
      cell = '';
      i++; // the \n of the line end
    }
  }
  return rows;
}

t.test('format=csv: PostHog’s CSV renderer, the whole answer as one row', async (t) => {
  const made = json<'insights_create'>(
    await create({ name: 'Views, "daily"', query: trendsQuery(), tags: ['kpi', 'growth'], saved: true }),
  );
  const res = await call('insights_retrieve', {
    key: a.key,
    params: { ...params, id: made.id },
    query: { format: 'csv' },
  });
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
  const [header, row, ...rest] = csvCells(res.raw);
  t.same(rest, [], 'a header and one row');
  t.same(header, [...header!].sort(), 'columns in sorted order');
  const cell = (name: string) => row![header!.indexOf(name)];
  t.equal(cell('name'), 'Views, "daily"', 'quoted, quotes doubled');
  t.equal(cell('id'), String(made.id));
  t.equal(cell('query.kind'), 'InsightVizNode', 'nested objects open into dotted columns');
  t.equal(cell('query.source.series.0.event'), '$pageview', 'lists by index');
  t.same([cell('tags.0'), cell('tags.1')], ['growth', 'kpi']);
  t.equal(cell('created_by.email'), a.user.email);
  t.equal(cell('saved'), 'True', 'booleans as Python writes them');
  t.equal(cell('favorited'), 'False');
  t.equal(cell('result'), '', 'null is an empty cell');
  t.notOk(
    header!.some((h) => h.startsWith('dashboards')),
    'an empty list leaves no column',
  );

  const list = await call('insights_list', {
    key: a.key,
    params,
    query: { format: 'csv', short_id: made.short_id, basic: true },
  });
  const [listHeader, listRow, ...more] = csvCells(list.raw);
  t.same(more, [], 'a page is one row too');
  const listCell = (name: string) => listRow![listHeader!.indexOf(name)];
  t.same(
    [listCell('count'), listCell('next'), listCell('previous'), listCell('results.0.short_id')],
    ['1', '', '', made.short_id],
  );
  const accepted = await call('insights_retrieve', {
    key: a.key,
    params: { ...params, id: made.id },
    headers: { accept: 'text/csv' },
  });
  t.equal(accepted.raw, res.raw, 'Accept: text/csv selects it');
  const walled = await call('insights_retrieve', {
    key: b.key,
    params: { project_id: b.project.id, id: made.id },
    query: { format: 'csv' },
  });
  t.match(walled, { status: 404, headers: { 'content-type': /^application\/json/ } }, "another project's: a JSON 404");
  const bad = await call('insights_list', { key: a.key, params, query: { format: 'txt' } });
  t.match(bad, { status: 400, body: { code: 'invalid_choice', attr: 'format' } });
});
