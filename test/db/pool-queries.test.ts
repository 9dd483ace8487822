// The pool's metrics (`posthog_db_pool_queries`): this process's queries waiting for a connection of its
// pool and those running on one, counted from postgres.js's own state, and none left once answered.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { countPoolQueries, openDatabase } from '../../src/db/client.js';
import { createTestDatabase } from '../helpers/db.js';

t.test('queries beyond what one connection pipelines wait, and are counted as waiting', async (t) => {
  const test = await createTestDatabase();
  t.teardown(() => test.drop());
  const database = await openDatabase({ url: test.url, poolSize: 1 });
  t.teardown(() => database.close());
  const queries = countPoolQueries();
  t.same(queries(), { waiting: 0, running: 0 });

  // One connection takes a query and four pipelined behind it (max_pipeline); the others wait their turn.
  const sleeping = Array.from({ length: 8 }, () => database.db.execute(sql`select pg_sleep(0.4)`));
  const settled = Promise.all(sleeping);
  await new Promise((r) => setTimeout(r, 150));
  const during = queries();
  t.equal(during.waiting + during.running, 8, 'every query not answered yet');
  t.equal(during.running, 5, 'sent on the one connection');
  t.equal(during.waiting, 3, 'waiting for it');
  await settled;
  t.same(queries(), { waiting: 0, running: 0 }, 'none once answered');

  await database.db.execute(sql`select 1/0`).catch(() => undefined);
  t.same(queries(), { waiting: 0, running: 0 }, 'a failed query is not counted either');

  // A transaction takes the connection for itself: the next one waits for it before its BEGIN.
  const first = database.db.transaction(async (tx) => tx.execute(sql`select pg_sleep(0.4)`));
  await new Promise((r) => setTimeout(r, 150));
  const second = database.db.transaction(async (tx) => tx.execute(sql`select 1`));
  await new Promise((r) => setTimeout(r, 50));
  t.same(queries(), { waiting: 1, running: 1 }, "the second transaction waits while the first's query runs");
  await Promise.all([first, second]);
  t.same(queries(), { waiting: 0, running: 0 });
  await database.db.transaction(async () => Promise.reject(new Error('rolled back'))).catch(() => undefined);
  t.same(queries(), { waiting: 0, running: 0 }, 'a transaction rolled back is not left waiting');
});
