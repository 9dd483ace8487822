// Statements pipelined on one transaction: when one fails, the error a caller sees is that one's (a deadlock
// it retries), not the "transaction is aborted" of a statement sent after it.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { sqlState } from '../../src/core/sql-state.js';
import { allPipelined } from '../../src/db/pipelined.js';
import { openTestDatabase } from '../helpers/db.js';

const { database, drop } = await openTestDatabase();
t.teardown(async () => {
  await database.close();
  await drop();
});
const { db } = database;

/** A failing statement whose rejection reaches the caller late, as one sent by an async helper does. */
const failingLate = (tx: typeof db) =>
  (async () => {
    try {
      return await tx.execute(sql`select 1 / 0`);
    } catch (err) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw err;
    }
  })();

const stateOf = (work: (tx: typeof db) => Promise<unknown>) =>
  db
    .transaction((tx) => work(tx as unknown as typeof db))
    .then(
      () => 'committed',
      (err: unknown) => sqlState(err),
    );

t.test('Promise.all answers with the statement that merely followed the failure', async (t) => {
  t.equal(await stateOf((tx) => Promise.all([failingLate(tx), tx.execute(sql`select 1`)])), '25P02');
});

t.test('allPipelined answers with the failure itself', async (t) => {
  t.equal(await stateOf((tx) => allPipelined([failingLate(tx), tx.execute(sql`select 1`)])), '22012');
});

t.test('allPipelined answers every result in order when nothing fails', async (t) => {
  const [a, b] = await db.transaction((tx) => allPipelined([tx.execute(sql`select 1 as n`), Promise.resolve('plain')]));
  t.same([...(a as unknown as { n: number }[])], [{ n: 1 }]);
  t.equal(b, 'plain');
});
