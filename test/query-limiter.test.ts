// The Query API's slots: a total, a share per organization, freed slots given to organizations in turn.
import t from 'tap';
import { ApiError } from '../src/core/errors.js';
import { FairLimiter } from '../src/query/limiter.js';

/** A task that runs until released, recording when it started. */
function gate(log: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { run: () => (log.push(name), done), release };
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('one organization never holds more than its share; another starts at once', async (t) => {
  const limiter = new FairLimiter(4, 2, 10);
  const log: string[] = [];
  const x = Array.from({ length: 6 }, (_, i) => gate(log, `x${i}`));
  const xs = x.map((g) => limiter.run('X', g.run));
  await tick();
  t.same(log, ['x0', 'x1'], 'X runs two of four slots');
  const o = gate(log, 'o0');
  const os = limiter.run('O', o.run);
  await tick();
  t.same(log, ['x0', 'x1', 'o0'], "O's query starts without waiting for X's");
  t.same(limiter.stats(), { running: 3, waiting: 4 });
  o.release();
  await os;
  x[0]!.release();
  await tick();
  t.same(log.at(-1), 'x2', "X's next runs when one of its own ends");
  for (const g of x) g.release();
  await Promise.all(xs);
  t.same(limiter.stats(), { running: 0, waiting: 0 });
});

t.test('freed slots go to organizations in turn, not in arrival order', async (t) => {
  const limiter = new FairLimiter(1, 1, 10);
  const log: string[] = [];
  const first = gate(log, 'first');
  const all = [limiter.run('X', first.run)];
  const gates: Record<string, ReturnType<typeof gate>> = {};
  for (const [org, name] of [
    ['X', 'x1'],
    ['X', 'x2'],
    ['X', 'x3'],
    ['Y', 'y1'],
    ['Z', 'z1'],
    ['Y', 'y2'],
  ] as const) {
    gates[name] = gate(log, name);
    all.push(limiter.run(org, gates[name]!.run));
  }
  first.release();
  for (const name of ['x1', 'y1', 'z1', 'x2', 'y2', 'x3']) {
    await tick();
    t.equal(log.at(-1), name);
    gates[name]!.release();
  }
  await Promise.all(all);
});

t.test('a full queue of one organization is a 429; the others are not refused', async (t) => {
  const limiter = new FairLimiter(2, 1, 2);
  const log: string[] = [];
  const g = gate(log, 'x');
  const runs = [0, 1, 2].map(() => limiter.run('X', g.run));
  const refused = await limiter.run('X', g.run).catch((e: unknown) => e);
  t.ok(refused instanceof ApiError && refused.statusCode === 429);
  t.equal((refused as ApiError).code, 'throttled');
  t.throws(() => limiter.check('X'));
  t.doesNotThrow(() => limiter.check('Y'));
  g.release();
  await Promise.all(runs);
  t.doesNotThrow(() => limiter.check('X'), 'accepted again once the queue drains');
});

t.test('a failing task frees its slot', async (t) => {
  const limiter = new FairLimiter(1, 1, 10);
  await t.rejects(
    limiter.run('X', async () => {
      throw new Error('boom');
    }),
  );
  t.equal(await limiter.run('X', async () => 'next'), 'next');
  t.same(limiter.stats(), { running: 0, waiting: 0 });
});
