// Deleting persons: the person, its distinct ids and (with delete_events) every one of its events go
// in one transaction, and no read path (events listing, one event, property values, the Query API,
// batch exports of events, persons and sessions) returns them afterwards. A distinct id seen again
// makes a new person, as PostHog.
import t from 'tap';
import { recordSource } from '../../src/batch-exports/records.js';
import { insertBatchExport } from '../../src/batch-exports/queries.js';
import { buildTestApp, json } from '../helpers/app.js';
import { capture, personOf, storedEvents } from '../helpers/events.js';
import { makeTenant, type Tenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const T0 = Date.parse('2026-11-20T10:00:00Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

/**
 * gone-user: 3 events on two distinct ids ($identify merges anon-1 into it) plus one event without a
 * person profile; kept-user: 2 events. So 6 events, 4 of them the person's.
 */
async function seeded() {
  const tenant = await makeTenant(db);
  const token = tenant.project.api_token;
  await capture(ctx, token, [
    { event: 'visit', distinct_id: 'anon-1', timestamp: at(0), properties: { secret_prop: 'gone-only' } },
    { event: 'visit', distinct_id: 'kept-user', timestamp: at(1), properties: { shared: 'k' } },
  ]);
  await capture(ctx, token, [
    {
      event: '$identify',
      distinct_id: 'gone-user',
      timestamp: at(2),
      properties: { $anon_distinct_id: 'anon-1', $set: { email: 'gone@example.com' } },
    },
    { event: 'buy', distinct_id: 'gone-user', timestamp: at(3), properties: { shared: 'g' } },
    { event: 'buy', distinct_id: 'gone-user', timestamp: at(4), properties: { $process_person_profile: false } },
    { event: 'buy', distinct_id: 'kept-user', timestamp: at(5) },
  ]);
  const gone = (await personOf(db, tenant.project.id, 'gone-user'))!;
  const kept = (await personOf(db, tenant.project.id, 'kept-user'))!;
  t.equal((await personOf(db, tenant.project.id, 'anon-1'))!.id, gone.id, 'seed: anon-1 merged into gone-user');
  return { tenant, params: { project_id: tenant.project.id }, gone, kept };
}

const hogql = async (tenant: Tenant, query: string) => {
  const res = await call('query_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { query: { kind: 'HogQLQuery', query } },
  });
  if (res.status !== 200) throw new Error(`${query}: ${res.status} ${res.raw}`);
  return (res.body as unknown as { results: unknown[][] }).results;
};

/** What the read paths show of the project's events and persons, by distinct id. */
async function readPaths(tenant: Tenant) {
  const params = { project_id: tenant.project.id };
  const listed = json<'events_list'>(await call('events_list', { key: tenant.key, params, query: { limit: 100 } }));
  const byDistinctId = json<'events_list'>(
    await call('events_list', { key: tenant.key, params, query: { distinct_id: 'gone-user' } }),
  );
  const values = await call('events_values_retrieve', { key: tenant.key, params, query: { key: 'secret_prop' } });
  const exp = await insertBatchExport(db, {
    project_id: tenant.project.id,
    name: 'check',
    destination_type: 'S3',
    destination_config: {
      bucket_name: 'b',
      region: 'us-east-1',
      prefix: '',
      aws_access_key_id: 'i',
      aws_secret_access_key: 's',
    },
    paused: true,
  });
  const end = new Date(Date.now() + 3_600_000);
  const exportCount = async (model: 'events' | 'persons' | 'sessions') =>
    (await recordSource(db, { ...exp, model }, null, end)).count();
  return {
    listed: (listed.results as { distinct_id: string }[]).map((e) => e.distinct_id).sort(),
    byDistinctId: byDistinctId.results.length,
    values: values.body,
    hogqlEvents: await hogql(
      tenant,
      'select distinct_id, count() from events group by distinct_id order by distinct_id',
    ),
    hogqlPersons: await hogql(tenant, "select count() from events where person.properties.email = 'gone@example.com'"),
    eventsQuery: (
      (
        await call('query_create', {
          key: tenant.key,
          params,
          body: {
            query: { kind: 'EventsQuery', select: ['event', 'distinct_id'], where: ["distinct_id = 'gone-user'"] },
          },
        })
      ).body as { results: unknown[] }
    ).results.length,
    exported: {
      events: await exportCount('events'),
      persons: await exportCount('persons'),
      sessions: await exportCount('sessions'),
    },
  };
}

t.test('delete with delete_events: the person and all its events leave every read path, at once', async (t) => {
  const { tenant, params, gone, kept } = await seeded();
  const before = await readPaths(tenant);
  t.same(before.listed, ['anon-1', 'gone-user', 'gone-user', 'gone-user', 'kept-user', 'kept-user']);
  t.equal(before.byDistinctId, 3);
  t.same(before.hogqlPersons, [[3]], 'the three events with a person profile see its email');
  t.same(before.exported, { events: 6, persons: 3, sessions: before.exported.sessions });
  const uuidOfGoneEvent = (await storedEvents(db, tenant.project.id)).find((e) => e.distinct_id === 'gone-user')!.uuid;

  const res = await call('persons_destroy', {
    key: tenant.key,
    params: { ...params, id: gone.uuid },
    query: { delete_events: true },
  });
  t.equal(res.status, 202);
  t.equal(res.raw, '');

  const after = await readPaths(tenant);
  t.same(after.listed, ['kept-user', 'kept-user'], "events listing: only the other person's");
  t.equal(after.byDistinctId, 0);
  t.same(after.values, [], 'property values of the deleted events are gone');
  t.same(after.hogqlEvents, [['kept-user', 2]], 'Query API: none of its events');
  t.same(after.hogqlPersons, [[0]]);
  t.equal(after.eventsQuery, 0, 'EventsQuery: none');
  t.equal(after.exported.events, 2, 'an events export reads 2 events');
  t.equal(after.exported.persons, 1, 'a persons export reads only kept-user (one distinct id)');
  t.ok(after.exported.sessions <= before.exported.sessions);
  const one = await call('events_retrieve', { key: tenant.key, params: { ...params, id: uuidOfGoneEvent } });
  t.equal(one.status, 404, 'one of its events by uuid');
  t.equal((await call('persons_retrieve', { key: tenant.key, params: { ...params, id: gone.id } })).status, 404);
  t.equal((await call('persons_destroy', { key: tenant.key, params: { ...params, id: gone.id } })).status, 404);
  const stored = await storedEvents(db, tenant.project.id);
  t.same(
    stored.map((e) => [e.distinct_id, e.person_id]),
    [
      ['kept-user', kept.id],
      ['kept-user', kept.id],
    ],
  );

  // The distinct ids are free again: an event for one makes a new person with nothing of the old one.
  await capture(ctx, tenant.project.api_token, [{ event: 'back', distinct_id: 'gone-user' }]);
  const reborn = (await personOf(db, tenant.project.id, 'gone-user'))!;
  t.not(reborn.id, gone.id);
  t.not(reborn.uuid, gone.uuid);
  t.same(reborn.properties, {});
  t.equal(await personOf(db, tenant.project.id, 'anon-1'), undefined, "anon-1 is no one's until it is seen");
});

t.test('delete without delete_events keeps the events, as PostHog; they no longer carry the person', async (t) => {
  const { tenant, params, gone } = await seeded();
  t.equal((await call('persons_destroy', { key: tenant.key, params: { ...params, id: gone.id } })).status, 202);
  const after = await readPaths(tenant);
  t.equal(after.listed.length, 6);
  t.same(after.hogqlPersons, [[0]], "no event sees the deleted person's properties");
  t.equal(after.exported.persons, 1);
  t.equal(await personOf(db, tenant.project.id, 'gone-user'), undefined);
});

t.test('delete_events keeps the person and removes all its events', async (t) => {
  const { tenant, params, gone } = await seeded();
  const res = await call('persons_delete_events_create', { key: tenant.key, params: { ...params, id: gone.id } });
  t.equal(res.status, 202);
  const after = await readPaths(tenant);
  t.same(after.listed, ['kept-user', 'kept-user']);
  const person = json<'persons_retrieve'>(
    await call('persons_retrieve', { key: tenant.key, params: { ...params, id: gone.id } }),
  );
  t.same(person.distinct_ids, ['anon-1', 'gone-user']);
  t.equal(person.properties.email, 'gone@example.com');
});

t.test("bulk_delete by distinct_ids or ids, in the body or the query, with PostHog's limits", async (t) => {
  const { tenant, params, gone, kept } = await seeded();
  const bulk = (opts: { body?: unknown; query?: Record<string, string | boolean | string[]> }) =>
    call('persons_bulk_delete_create', { key: tenant.key, params, ...opts });
  const none = await bulk({ body: {} });
  t.equal(none.status, 400);
  t.match(none.body, { type: 'validation_error', detail: 'You need to specify either distinct_ids or ids' });
  const many = Array.from({ length: 1001 }, (_, i) => `d${i}`);
  const tooMany = await bulk({ body: { distinct_ids: many } });
  t.equal(tooMany.status, 400);
  t.match(tooMany.body, { detail: 'You can only pass 1000 distinct_ids in one call' });
  t.match((await bulk({ body: { ids: many } })).body, { detail: 'You can only pass 1000 ids in one call' });
  t.equal((await storedEvents(db, tenant.project.id)).length, 6, 'nothing deleted by a refused call');

  // anon-1 names gone-user; an unknown id is skipped.
  const res = await bulk({ body: { distinct_ids: ['anon-1', 'nobody'], delete_events: true } });
  t.equal(res.status, 202);
  t.equal(await personOf(db, tenant.project.id, 'gone-user'), undefined);
  t.same(
    (await storedEvents(db, tenant.project.id)).map((e) => e.distinct_id),
    ['kept-user', 'kept-user'],
  );

  const byQuery = await bulk({ query: { ids: [kept.uuid, String(gone.id)] } });
  t.equal(byQuery.status, 202);
  t.equal(await personOf(db, tenant.project.id, 'kept-user'), undefined);
  t.equal((await storedEvents(db, tenant.project.id)).length, 2, 'events stay without delete_events');
  const page = json<'persons_list'>(await call('persons_list', { key: tenant.key, params }));
  t.equal(page.count, 0);
});

t.test('bulk_delete by numeric ids, and at exactly the limit', async (t) => {
  const { tenant, params, gone, kept } = await seeded();
  const ids = [gone.id, ...Array.from({ length: 999 }, (_, i) => 2_000_000_000 - i)];
  const res = await call('persons_bulk_delete_create', { key: tenant.key, params, body: { ids } });
  t.equal(res.status, 202);
  t.equal(await personOf(db, tenant.project.id, 'gone-user'), undefined);
  t.equal((await personOf(db, tenant.project.id, 'kept-user'))!.id, kept.id);
});

t.test('a delete racing ingestion of the same distinct ids leaves no event on the deleted person', async (t) => {
  for (let round = 0; round < 3; round++) {
    const { tenant, params, gone } = await seeded();
    const token = tenant.project.api_token;
    const batches = Array.from({ length: 8 }, (_, i) =>
      capture(ctx, token, [
        { event: 'race', distinct_id: i % 2 ? 'gone-user' : 'anon-1' },
        // Half the batches change the person, so both ingestion paths race the delete.
        ...(i % 4 === 0 ? [{ event: '$set', distinct_id: 'gone-user', properties: { $set: { n: i } } }] : []),
      ]),
    );
    const deleted = call('persons_destroy', {
      key: tenant.key,
      params: { ...params, id: gone.id },
      query: { delete_events: true },
    });
    await Promise.all(batches);
    const res = await deleted;
    t.equal(res.status, 202, res.raw);
    const stored = await storedEvents(db, tenant.project.id);
    t.equal(stored.filter((e) => e.person_id === gone.id).length, 0, `round ${round}: none on the deleted person`);
    const now = await personOf(db, tenant.project.id, 'gone-user');
    for (const e of stored.filter((e) => e.event === 'race' && e.distinct_id === 'gone-user')) {
      // Each surviving event arrived after the delete, so it belongs to the new person.
      t.equal(e.person_id, now?.id, `round ${round}: a later event is the new person's`);
    }
  }
});

t.test('answers computed before a delete are not served after it: query kinds, insights, the events CSV', async (t) => {
  const { tenant, params, gone } = await seeded();
  // Every event of Nov 20 (the seed's six), as one number.
  const query = {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: null, math: 'total' }],
    dateRange: { date_from: '2026-11-20', date_to: '2026-11-20' },
    trendsFilter: { display: 'BoldNumber' },
  };
  const trends = async () => {
    const res = await call('query_create', { key: tenant.key, params, body: { refresh: 'blocking', query } as never });
    if (res.status !== 200) throw new Error(res.raw);
    const body = res.body as unknown as { results: { aggregated_value: number }[]; is_cached: boolean };
    return [body.results[0]!.aggregated_value, body.is_cached];
  };
  const insight = json<'insights_create'>(
    await call('insights_create', { key: tenant.key, params, body: { name: 'all', query } as never }),
  );
  const insightTotal = async () => {
    const res = await call('insights_retrieve', {
      key: tenant.key,
      params: { ...params, id: insight.id },
      query: { refresh: 'blocking' },
    });
    return (res.body as unknown as { result: { aggregated_value: number }[] }).result[0]!.aggregated_value;
  };
  const csvRows = async () => {
    const res = await call('events_list', { key: tenant.key, params, query: { format: 'csv' } });
    return res.raw.trim().split('\r\n').length - 1;
  };
  t.same(await trends(), [6, false]);
  t.same(await trends(), [6, true], 'the answer is cached');
  t.equal(await insightTotal(), 6);
  t.equal(await csvRows(), 6);

  const res = await call('persons_destroy', {
    key: tenant.key,
    params: { ...params, id: gone.id },
    query: { delete_events: true },
  });
  t.equal(res.status, 202);
  t.same(await trends(), [2, false], "TrendsQuery: computed again, without the person's four events");
  t.equal(await insightTotal(), 2, 'the insight too');
  t.equal(await csvRows(), 2, 'the events CSV');
});
