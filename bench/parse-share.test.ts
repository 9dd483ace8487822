// Parse + compile as a share of a simple query's time, through the real app: `select event, count() from events
// group by event` over 1,000 events, as the answer's own `timings` (PostHog's ./parse, ./compile and the whole)
// report them. The first run parses; the runs after it find the AST in the cache and cost no parse.
// Run: npx tap bench/parse-share.test.ts (BENCH_OUT=<file> writes the table).
import { writeFileSync } from 'node:fs';
import t from 'tap';
import { buildTestApp } from '../test/helpers/app.js';
import { insertEvents } from '../test/helpers/event-rows.js';
import { makeTenant } from '../test/helpers/factories.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const ctx = await buildTestApp(t);
const a = await makeTenant(ctx.db);
await insertEvents(
  ctx.db,
  a.project.id,
  Array.from({ length: 1000 }, (_, i) => ({ event: ['signup', '$pageview', 'buy', 'view'][i % 4]! })),
);

async function run(query: string) {
  const res = await ctx.call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: { query: { kind: 'HogQLQuery', query }, refresh: 'force_blocking' },
  });
  if (res.status !== 200) throw new Error(res.raw);
  const timings = Object.fromEntries((res.body.timings as { k: string; t: number }[]).map((x) => [x.k, x.t * 1000]));
  return { parse: timings['./parse']!, compile: timings['./compile']!, total: timings['.']! };
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

t.test('parse + compile share of a simple query', async (t) => {
  // The parser's thread starts with the first parse (from the sources, through tsx: seconds); one query warms it.
  const cold = await run(`select 1 -- ${Date.now()}`);
  const query = `select event, count() from events group by event -- ${Date.now()}`;
  const first = await run(query);
  const cached: Awaited<ReturnType<typeof run>>[] = [];
  for (let i = 0; i < RUNS; i++) cached.push(await run(query));
  const share = (r: { parse: number; compile: number; total: number }) => ((r.parse + r.compile) / r.total) * 100;
  const rows = [
    ['parser thread start + parse of `select 1`', cold.parse, cold.compile, cold.total, share(cold)],
    ['first run (parsed)', first.parse, first.compile, first.total, share(first)],
    [
      `cached AST, median of ${RUNS}`,
      median(cached.map((r) => r.parse)),
      median(cached.map((r) => r.compile)),
      median(cached.map((r) => r.total)),
      median(cached.map(share)),
    ],
  ] as const;
  const table = [
    '| run | parse ms | compile ms | total ms | parse+compile share |',
    '|---|---|---|---|---|',
    ...rows.map(
      ([name, p, c, total, s]) =>
        `| ${name} | ${p.toFixed(3)} | ${c.toFixed(3)} | ${total.toFixed(2)} | ${s.toFixed(1)}% |`,
    ),
  ].join('\n');
  console.log(table);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${table}\n`);
  t.ok(median(cached.map((r) => r.parse)) < 0.5, 'a cached AST costs no parse');
});
