// Another organization's `select 1` while one organization runs four heavy queries (issue #27): the
// latency of the trivial query alone, then while the four run. `make bench` runs it after the read
// scenarios (BENCH_SCENARIOS=query_fairness alone); `tsx bench/query-fairness.ts <base> <key>` runs it
// against a server already running (to measure an earlier commit the same way).

/** 1M x 1M rows: runs until the server's statement timeout. */
const HEAVY = 'select count() from events a cross join events b';
const PROBES = 20;

interface Latency {
  p50Ms: number;
  maxMs: number;
  statuses: string;
}

export interface FairnessResult {
  alone: Latency;
  underLoad: Latency;
  heavyStatuses: string;
  heavyMs: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
};
const statusList = (statuses: number[]) =>
  [...new Set(statuses)].map((s) => `${statuses.filter((x) => x === s).length}× ${s}`).join(', ');

export async function queryFairness(base: string, key: string, heavyProjectId: number): Promise<FairnessResult> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const query = async (projectId: number, hogql: string) => {
    const res = await fetch(`${base}/api/projects/${projectId}/query/`, {
      method: 'POST',
      headers,
      // Computed every time (never a cached answer), so the slots are what is measured.
      body: JSON.stringify({ query: { kind: 'HogQLQuery', query: hogql }, refresh: 'force_blocking' }),
    });
    await res.arrayBuffer();
    return res.status;
  };
  // The other organization (the same user is a member of both; slots are per organization).
  const created = await fetch(`${base}/api/organizations/`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: `Bench other org ${Date.now()}` }),
  });
  const org = (await created.json()) as { id: string };
  const projects = (await (await fetch(`${base}/api/projects/?limit=1000`, { headers })).json()) as {
    results: { id: number; organization: string }[];
  };
  const other = projects.results.find((p) => p.organization === org.id);
  if (!other) throw new Error(`no project in the new organization: ${JSON.stringify(projects).slice(0, 500)}`);

  const probe = async (): Promise<Latency> => {
    const times: number[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < PROBES; i++) {
      const start = performance.now();
      statuses.push(await query(other.id, 'select 1'));
      times.push(performance.now() - start);
    }
    return {
      p50Ms: Math.round(percentile(times, 0.5)),
      maxMs: Math.round(Math.max(...times)),
      statuses: statusList(statuses),
    };
  };
  const alone = await probe();
  const heavyStart = performance.now();
  const heavy = Array.from({ length: 4 }, () => query(heavyProjectId, HEAVY));
  await new Promise((r) => setTimeout(r, 500));
  const underLoad = await probe();
  const heavyStatuses = statusList(await Promise.all(heavy));
  return { alone, underLoad, heavyStatuses, heavyMs: Math.round(performance.now() - heavyStart) };
}

export function fairnessRows(backend: string, label: string, r: FairnessResult): string[] {
  return [
    `| ${backend} | ${label} | alone | ${r.alone.p50Ms} | ${r.alone.maxMs} | ${r.alone.statuses} | |`,
    `| ${backend} | ${label} | while one org runs 4 heavy queries | ${r.underLoad.p50Ms} | ${r.underLoad.maxMs} | ` +
      `${r.underLoad.statuses} | ${r.heavyStatuses} in ${(r.heavyMs / 1000).toFixed(1)} s |`,
  ];
}

export const FAIRNESS_HEADER = [
  "| backend | code | another org's select 1 | p50 ms | max ms | answers | the four heavy queries |",
  '|---|---|---|---:|---:|---|---|',
];

if (import.meta.url === `file://${process.argv[1]}`) {
  const [base, key, project, label = 'this commit'] = process.argv.slice(2);
  const result = await queryFairness(base!, key!, Number(project));
  process.stdout.write(`${[...FAIRNESS_HEADER, ...fairnessRows('postgresql', label, result)].join('\n')}\n`);
}
