// Effects a workflow registers in its transaction (mail, jobs) run once it has committed, and never when it
// (or the savepoint they were registered in) rolls back.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { afterCommit, transaction } from '../../src/db/after-commit.js';
import { openTestDatabase } from '../helpers/db.js';

const { database, drop } = await openTestDatabase();
t.teardown(async () => {
  await database.close();
  await drop();
});
const { db } = database;
await db.execute(sql`create table after_commit_probe (n int)`);
const probe = async () => {
  const rows = (await db.execute(sql`select n from after_commit_probe order by n`)) as unknown as { n: number }[];
  return rows.map((r) => r.n);
};

t.test('a committed transaction runs its effects after the commit, in order, before returning', async (t) => {
  const ran: string[] = [];
  const result = await transaction(db, async (tx) => {
    await tx.execute(sql`insert into after_commit_probe values (1)`);
    afterCommit(tx, async () => {
      // Read on another connection: only a committed row is seen.
      ran.push(`first saw ${JSON.stringify(await probe())}`);
    });
    afterCommit(tx, () => void ran.push('second'));
    t.same(ran, [], 'nothing runs while the transaction is open');
    return 'answer';
  });
  t.equal(result, 'answer');
  t.same(ran, ['first saw [1]', 'second']);
});

t.test('a transaction that rolls back never runs its effects', async (t) => {
  const ran: string[] = [];
  const failed = transaction(db, async (tx) => {
    await tx.execute(sql`insert into after_commit_probe values (2)`);
    afterCommit(tx, () => void ran.push('mail'));
    throw new Error('refused');
  });
  await t.rejects(failed, { message: 'refused' });
  await new Promise((r) => setTimeout(r, 50));
  t.same(ran, [], 'the effect did not run');
  t.same(await probe(), [1], 'and the write is gone');
});

t.test('a savepoint that rolls back drops its effects; the enclosing commit runs the others', async (t) => {
  const ran: string[] = [];
  await transaction(db, async (tx) => {
    afterCommit(tx, () => void ran.push('outer'));
    await transaction(tx, async (inner) => {
      afterCommit(inner, () => void ran.push('kept'));
    });
    await t.rejects(
      transaction(tx, async (inner) => {
        afterCommit(inner, () => void ran.push('dropped'));
        throw new Error('inner refused');
      }),
    );
    t.same(ran, [], 'a released savepoint waits for the outer commit');
  });
  t.same(ran, ['outer', 'kept']);
});

t.test('afterCommit outside such a transaction is a mistake, said at once', async (t) => {
  await db.transaction(async (tx) => {
    t.throws(() => afterCommit(tx, () => undefined), /needs a transaction opened by transaction\(\)/);
  });
});
