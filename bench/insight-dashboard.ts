// Issue #30's measurement: a dashboard of 10 insight tiles over the seeded events. Its first load
// computes every tile; its cached load (a plain read, PostHog's default, served from the result cache) is
// measured against the retrieve of a 20-text-tile dashboard in the same run, in turns (A B B A). The
// result cache's size and hit ratio are read from its table afterwards.
import { sqlClient } from './processes.js';

const week = { date_from: '-7d' };
const events = (...names: string[]) => names.map((event) => ({ kind: 'EventsNode', event }));
const viz = (source: Record<string, unknown>) => ({ kind: 'InsightVizNode', source });
const table = (query: string) => ({ kind: 'DataVisualizationNode', source: { kind: 'HogQLQuery', query } });

/** The tiles: TrendsQuery in several forms, a breakdown, a funnel, stickiness and two HogQL queries. */
export const INSIGHTS: { name: string; query: Record<string, unknown> }[] = [
  { name: 'Pageviews per day', query: viz({ kind: 'TrendsQuery', series: events('$pageview'), dateRange: week }) },
  {
    name: 'Daily active users',
    query: viz({ kind: 'TrendsQuery', series: [{ ...events('$pageview')[0], math: 'dau' }], dateRange: week }),
  },
  {
    name: 'Pageviews by browser',
    query: viz({
      kind: 'TrendsQuery',
      series: events('$pageview'),
      dateRange: week,
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
    }),
  },
  {
    name: 'Signups and purchases per week',
    query: viz({
      kind: 'TrendsQuery',
      series: events('signup', 'purchase'),
      interval: 'week',
      dateRange: { date_from: '-30d' },
    }),
  },
  {
    name: 'Pro plan pageviews per hour',
    query: viz({
      kind: 'TrendsQuery',
      series: events('$pageview'),
      interval: 'hour',
      dateRange: week,
      properties: [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }],
    }),
  },
  {
    name: 'Purchases per signup',
    query: viz({
      kind: 'TrendsQuery',
      series: events('purchase', 'signup'),
      dateRange: week,
      trendsFilter: { formula: 'A / B' },
    }),
  },
  {
    name: 'Signup funnel',
    query: viz({ kind: 'FunnelsQuery', series: events('$pageview', 'signup', 'purchase'), dateRange: week }),
  },
  {
    name: 'Pageview stickiness',
    query: viz({ kind: 'StickinessQuery', series: events('$pageview'), dateRange: week }),
  },
  { name: 'Events (HogQL count)', query: table('select count() from events where {filters}') },
  {
    name: 'Events by name (HogQL)',
    query: table(
      "select event, count() as n from events where timestamp > now() - interval '7 days' " +
        'group by event order by n desc',
    ),
  },
];

type Api = (path: string, method?: string, body?: unknown) => Promise<unknown>;

/** Makes the dashboard and its 10 insights (each joins through `dashboards`, as PostHog's API allows). */
export async function seedInsightDashboard(api: Api, projectId: number): Promise<number> {
  const d = (await api(`/api/projects/${projectId}/dashboards/`, 'POST', { name: 'Insights' })) as { id: number };
  for (const insight of INSIGHTS) {
    await api(`/api/projects/${projectId}/insights/`, 'POST', { ...insight, dashboards: [d.id] });
  }
  return d.id;
}

interface Tile {
  insight: { name: string; result: unknown; is_cached: boolean } | null;
}
interface DashboardAnswer {
  tiles: Tile[];
}

/**
 * One timed load of the dashboard with `refresh`: its milliseconds, and the tiles' results. Throws
 * unless every insight tile answered with a result.
 */
export async function loadOnce(
  base: string,
  key: string,
  path: string,
  refresh?: string,
): Promise<{ ms: number; tiles: { name: string; result: unknown; is_cached: boolean }[] }> {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}${refresh ? `?refresh=${refresh}` : ''}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 500)}`);
  const tiles = (JSON.parse(text) as DashboardAnswer).tiles.flatMap((t) => (t.insight ? [t.insight] : []));
  if (tiles.length !== INSIGHTS.length) throw new Error(`${path}: ${tiles.length} insight tiles`);
  const empty = tiles.filter((t) => t.result === null).map((t) => t.name);
  if (empty.length) throw new Error(`${path}?refresh=${refresh}: no result for ${empty.join(', ')}`);
  return { ms: Math.round(ms), tiles };
}

/**
 * Empties the project's result cache: the other scenarios' fixture requests (POST /query/) computed
 * some of the same queries, whose answers the tiles would otherwise find.
 */
export async function emptyCache(sqlUrl: string, projectId: number): Promise<void> {
  const sql = sqlClient(sqlUrl);
  await sql`delete from query_cache where project_id = ${projectId}`;
  await sql.end();
}

export interface CacheFigures {
  rows: number;
  bytes: number;
  tableBytes: number;
  hits: number;
  misses: number;
}

/** The result cache of the project after the scenario: rows, answer bytes, the table's size, hits and misses. */
export async function cacheFigures(sqlUrl: string, projectId: number): Promise<CacheFigures> {
  const sql = sqlClient(sqlUrl);
  try {
    const [row] = await sql`select count(*)::int as rows, coalesce(sum(bytes), 0)::float8 as bytes,
        coalesce(sum(hits), 0)::float8 as hits, coalesce(sum(misses), 0)::float8 as misses,
        pg_total_relation_size('query_cache')::float8 as table_bytes
      from query_cache where project_id = ${projectId}`;
    return {
      rows: row!.rows,
      bytes: row!.bytes,
      tableBytes: row!.table_bytes,
      hits: row!.hits,
      misses: row!.misses,
    };
  } finally {
    await sql.end();
  }
}
