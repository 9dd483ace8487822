// The result cache's bounds: each project keeps its newest CACHE_MAX_ROWS answers and none past its expiry,
// trimmed as answers are written, never touching another project's rows.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { writeCache } from '../../src/insights/cache-queries.js';
import { rowsOf } from '../../src/db/queries/util.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t);
const { db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const DAY = 86_400_000;
const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 0, minutes));
const write = (projectId: number, key: string, minutes: number, maxRows = 2, keepMs = 7 * DAY) =>
  writeCache(
    db,
    projectId,
    key,
    {
      text: `{"results":["${key}"]}`,
      insightFields: `{"result":["${key}"]}`,
      last_refresh: at(minutes),
      expires_at: new Date(Date.now() + keepMs),
    },
    maxRows,
  );
const keys = async (projectId: number) =>
  rowsOf<{ cache_key: string }>(
    await db.execute(sql`select cache_key from query_cache where project_id = ${projectId} order by cache_key`),
  ).map((r) => r.cache_key);

t.test('a project keeps its newest answers up to the bound; another project keeps its own', async (t) => {
  await write(b.project.id, 'cache_b1', 0);
  for (const [i, key] of ['cache_a1', 'cache_a2', 'cache_a3', 'cache_a4'].entries()) await write(a.project.id, key, i);
  t.same(await keys(a.project.id), ['cache_a3', 'cache_a4']);
  t.same(await keys(b.project.id), ['cache_b1']);
  await write(a.project.id, 'cache_a3', 10);
  t.same(await keys(a.project.id), ['cache_a3', 'cache_a4'], 'rewriting a kept answer keeps both');
});

t.test('an expired answer goes with the next write of its project', async (t) => {
  await write(b.project.id, 'cache_b2', 1, 10, -1000);
  t.same(await keys(b.project.id), ['cache_b1', 'cache_b2'], 'written, already past its expiry');
  await write(b.project.id, 'cache_b3', 2, 10);
  t.same(await keys(b.project.id), ['cache_b1', 'cache_b3']);
});
