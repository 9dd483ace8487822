// PostHog's batch export interface: the sessions model.
import t from 'tap';
import { makeTenant } from '../helpers/factories.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { destinationDatabase, waitFor } from '../helpers/batch-exports.js';
import { call, db, at, NOOP } from '../helpers/batch-export-compat-app.js';

t.test('the sessions model exports sessions by their last event', async (t) => {
  const c = await makeTenant(db);
  const sess = (id: string, url: string) => ({ properties: { $session_id: id, $current_url: url } });
  // s1 lies in hour 0; s2 starts in hour 0 and ends in hour 1; events without a session are not sessions.
  await insertEvents(db, c.project.id, [
    ...spread(3, at(0), at(0.5), (i) => ({ ...sess('s1', `/a${i}`), event: i === 0 ? '$pageview' : 'click' })),
    ...spread(2, at(0.5), at(1), () => ({ ...sess('s2', '/b'), event: 'click' })),
    ...spread(2, at(1), at(1.5), () => ({ ...sess('s2', '/c'), event: '$pageview' })),
    ...spread(4, at(0), at(2)),
  ]);
  const dest = await destinationDatabase(t);
  const destination = dest
    ? {
        type: 'Postgres',
        config: {
          host: dest.url.hostname,
          port: Number(dest.url.port || 5432),
          database: dest.url.pathname.slice(1),
          user: decodeURIComponent(dest.url.username),
          password: decodeURIComponent(dest.url.password) || 'x',
        },
      }
    : NOOP;
  const made = await call('projects_batch_exports_create', {
    key: c.key,
    params: { project_id: c.project.id },
    body: { name: 's', model: 'sessions', destination, interval: 'hour', paused: true },
  });
  t.equal(made.status, 201, JSON.stringify(made.body));
  t.equal(made.body.model, 'sessions');
  const P = { project_id: c.project.id, batch_export_id: made.body.id };
  const bf = await call('projects_batch_exports_backfills_create', {
    key: c.key,
    params: P,
    body: { start_at: at(0).toISOString(), end_at: at(2).toISOString() },
  });
  await waitFor('the sessions backfill', async () => {
    const r = await call('projects_batch_exports_backfills_retrieve', {
      key: c.key,
      params: { ...P, id: bf.body.backfill_id },
    });
    return r.body.status !== 'Running' && r.body.status !== 'Starting' && r.body;
  });
  const runs = await call('projects_batch_exports_runs_list', {
    key: c.key,
    params: P,
    query: { ordering: 'data_interval_start', start: '-1d' },
  });
  t.same(
    runs.body.results.map((r: any) => [r.status, r.records_total_count]),
    [
      ['Completed', 1],
      ['Completed', 1],
    ],
  );
  if (!dest) return;
  const rows = await dest.sql`select * from sessions order by session_id`;
  t.same(
    rows.map((r: any) => [
      r.session_id,
      Number(r.event_count),
      Number(r.pageview_count),
      r.entry_current_url,
      r.end_current_url,
    ]),
    [
      ['s1', 3, 1, '/a0', '/a2'],
      ['s2', 4, 2, '/b', '/c'],
    ],
  );
});
