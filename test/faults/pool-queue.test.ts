// postgres.js keeps its pool's connections in queues. Under sustained load every connection is busy
// and each new query is pipelined onto the connection at the head of the busy queue, which is then
// pushed back: unpatched, that queue's array grew by one slot per query for as long as the load
// lasted, and every connection going idle searched the whole array. A server under load slowed down
// round after round (patches/README.md, "queue growth").
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/client.js';
import { createTestDatabase } from '../helpers/db.js';
import { makeTenant } from '../helpers/factories.js';

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}

// The module the driver's ESM entry (what the server's bundle holds) uses; not among the package's exports.
const queueModule = pathToFileURL(join(process.cwd(), 'node_modules/postgres/src/queue.js')).href;
const { default: Queue } = (await import(queueModule)) as { default: <T>(initial?: T[]) => Queue<T> };

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => {
  gc();
  return getHeapStatistics().used_heap_size;
};

t.test("the busy queue's memory does not grow with the queries it has served", async (t) => {
  const connections = Array.from({ length: 10 }, (_, i) => ({ id: i }));
  const busy = Queue(connections);
  let misplaced = 0;
  const before = heapUsed();
  // The pool's pattern under load: take the head, pipeline a query on it, push it back (`go`), and
  // now and then one connection goes idle and is taken out from the middle (`move`), then used again.
  for (let n = 0; n < 1_000_000; n++) {
    const c = busy.shift()!;
    busy.push(c);
    if (n % 100 === 0) {
      const idle = connections[n % connections.length]!;
      if (busy.remove(idle) !== idle) misplaced++;
      busy.push(idle);
    }
  }
  const grown = heapUsed() - before;
  // Unpatched, a million queries leave an array of a million slots (8 MB).
  t.ok(grown < 1_000_000, `the queue held on to ${grown} bytes after a million queries`);
  t.equal(misplaced, 0, 'each idle connection was found where it was queued');
  t.equal(busy.length, connections.length);
  t.same(new Set(Array.from({ length: 10 }, () => busy.shift())), new Set(connections), 'each connection once');
  t.equal(busy.length, 0);
});

t.test('the queue stays first in, first out across its compactions', async (t) => {
  const q = Queue<number>();
  const out: number[] = [];
  let next = 0;
  for (let round = 0; round < 1000; round++) {
    for (let i = 0; i < 7; i++) q.push(next++);
    for (let i = 0; i < 5; i++) out.push(q.shift()!);
  }
  t.equal(q.remove(next - 1), next - 1, 'the newest can be taken out');
  t.equal(q.remove(-1), null, 'what is not queued is not found');
  t.equal(q.remove(out[0]!), null, 'nor what has left');
  while (q.length) out.push(q.shift()!);
  t.same(
    out,
    Array.from({ length: next - 1 }, (_, i) => i),
    'every item once, in order',
  );
});

t.test('every pipelined query gets its own answer, through the driver and the app', async (t) => {
  const { url, drop } = await createTestDatabase();
  // Two connections for fifty callers: nearly every query is pipelined onto a busy connection.
  const database = await openDatabase({ url, poolSize: 2 });
  const app = await buildApp({ config: loadConfig({ RATE_LIMITS: 'off', WORKER: '0' }), database });
  t.teardown(async () => {
    await app.close();
    await database.close();
    await drop();
  });
  const wrong: string[] = [];
  await Promise.all(
    Array.from({ length: 50 }, async (_, worker) => {
      for (let i = 0; i < 100; i++) {
        const value = worker * 1000 + i;
        const [row] = (await database.db.execute(sql`select ${value}::int as v`)) as unknown as { v: number }[];
        if (row?.v !== value) wrong.push(`${value} answered ${row?.v}`);
      }
    }),
  );
  t.same(wrong, [], '5,000 queries, each answered with its own value');

  const tenants = await Promise.all([makeTenant(database.db), makeTenant(database.db)]);
  const answers = await Promise.all(
    Array.from({ length: 400 }, async (_, i) => {
      const tenant = tenants[i % 2]!;
      const res = await app.inject({
        method: 'GET',
        url: `/api/organizations/${tenant.organization.id}/`,
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      return { status: res.statusCode, mine: res.json().id === tenant.organization.id };
    }),
  );
  t.same(
    answers.filter((a) => a.status !== 200 || !a.mine),
    [],
    '400 concurrent reads of two tenants, each answered with its own organization',
  );
});

t.test('a statement that stalls holds at most four queries queued behind it', async (t) => {
  const { url, drop } = await createTestDatabase();
  const database = await openDatabase({ url, poolSize: 2 });
  t.teardown(async () => {
    await database.close();
    await drop();
  });
  const quick = (i: number) => database.db.execute(sql`select ${i}::int as v`);
  // Both connections open, idle and holding the quick statement prepared (the driver pipelines nothing
  // behind a statement it has yet to describe): the stall takes one, the quick queries go to both.
  await Promise.all([quick(0), quick(1)]);
  let stalled = false;
  const stall = database.db.execute(sql`select pg_sleep(2)`).then(() => {
    stalled = true;
  });
  const behind = await Promise.all(Array.from({ length: 100 }, (_, i) => quick(i).then(() => stalled)));
  await stall;
  // Unbounded, postgres.js pipelined every other query onto the stalled connection.
  const waited = behind.filter(Boolean).length;
  t.ok(waited <= 4, `${waited} of 100 queries waited for the stalled statement`);
});
