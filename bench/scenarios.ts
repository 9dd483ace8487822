// What `make bench` measures. Each scenario names the API request and, where it reads the database,
// the route of bench/baseline.ts that runs the same SQL directly through postgres.js.
export interface Seeded {
  organizationId: string;
  projectId: number;
  apiToken: string;
  /** Absolute path (with query) of the 50th page of the unfiltered events listing. */
  eventsPage50?: string;
  base: string;
  key: string;
  /** A dashboard with 20 tiles. */
  dashboardId?: number;
  /** A dashboard with 10 insight tiles (bench/insight-dashboard.ts). */
  insightDashboardId?: number;
}

export interface BenchRequest {
  path: string;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
  /** Builds a fresh body for every request (autocannon's setupRequest). */
  setupRequest?: (req: { body?: string }) => { body?: string };
}

export interface Scenario {
  id: string;
  name: string;
  /** Also measured with one connection: the latency of a single page, without queueing behind 49 others. */
  pageLatency?: boolean;
  /** Concurrent connections, where the scenario's own default (BENCH_CONNECTIONS) would only measure queueing. */
  connections?: number;
  /** Items each request carries, for events-per-second figures. */
  itemsPerRequest?: number;
  request(s: Seeded): BenchRequest;
  baselineSql?(s: Seeded): string;
  /** An authenticated read that bench/handwritten.ts also serves: measured against it in rounds (issue #16). */
  handwritten?: boolean;
}

const PROPERTY_FILTER = encodeURIComponent(
  JSON.stringify([{ key: '$browser', value: 'Firefox', operator: 'exact', type: 'event' }]),
);

// `force_blocking`: these measure computing the answer, not serving it from the result cache.
const hogql = (query: string) => JSON.stringify({ query: { kind: 'HogQLQuery', query }, refresh: 'force_blocking' });

const trends = (series: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    refresh: 'force_blocking',
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: '$pageview', ...series }],
      dateRange: { date_from: '-30d' },
      ...extra,
    },
  });

/** 100 events from 10 users, as a server-side SDK flushing a busy queue sends them. */
function batchBody(token: string): string {
  const now = new Date().toISOString();
  const users = Array.from({ length: 10 }, () => `bench-${Math.floor(Math.random() * 1_000_000)}`);
  const batch = Array.from({ length: 100 }, (_, i) => ({
    event: i % 10 ? '$pageview' : 'signup',
    distinct_id: users[i % 10],
    timestamp: now,
    properties: { $current_url: `https://example.com/${i}`, $browser: 'Chrome', plan: 'free' },
  }));
  return JSON.stringify({ api_key: token, batch, sent_at: now });
}

export const scenarios: Scenario[] = [
  {
    id: 'organization',
    name: 'organization retrieve',
    handwritten: true,
    request: (s) => ({ path: `/api/organizations/${s.organizationId}/` }),
    baselineSql: (s) => `/sql/organization/${s.organizationId}`,
  },
  {
    id: 'projects',
    name: 'projects list',
    handwritten: true,
    request: () => ({ path: '/api/projects/' }),
  },
  {
    id: 'dashboards',
    name: 'dashboards list (100 x 20 tiles)',
    handwritten: true,
    request: (s) => ({ path: `/api/projects/${s.projectId}/dashboards/` }),
    baselineSql: (s) => `/sql/dashboards/${s.projectId}`,
  },
  {
    id: 'dashboard_retrieve',
    name: 'dashboard retrieve (20 tiles)',
    handwritten: true,
    request: (s) => ({ path: `/api/projects/${s.projectId}/dashboards/${s.dashboardId}/` }),
  },
  {
    id: 'dashboard_create',
    name: 'dashboard create',
    request: (s) => ({
      path: `/api/projects/${s.projectId}/dashboards/`,
      method: 'POST',
      body: JSON.stringify({ name: 'Bench', tags: ['b'] }),
    }),
  },
  {
    id: 'members',
    name: 'members list (500)',
    request: (s) => ({ path: `/api/organizations/${s.organizationId}/members/` }),
    handwritten: true,
    baselineSql: (s) => `/sql/members/${s.organizationId}`,
  },
  {
    id: 'event_definitions',
    name: 'event definitions list',
    handwritten: true,
    request: (s) => ({ path: `/api/projects/${s.projectId}/event_definitions/` }),
  },
  {
    id: 'events',
    name: 'events list, 1M events, no filter',
    pageLatency: true,
    handwritten: true,
    request: (s) => ({ path: `/api/projects/${s.projectId}/events/` }),
    baselineSql: (s) => `/sql/events/${s.projectId}`,
  },
  {
    id: 'events_event',
    name: 'events list, 1M events, event filter',
    pageLatency: true,
    request: (s) => ({ path: `/api/projects/${s.projectId}/events/?event=signup` }),
    baselineSql: (s) => `/sql/events/${s.projectId}?event=signup`,
  },
  {
    id: 'events_property',
    name: 'events list, 1M events, property filter',
    pageLatency: true,
    request: (s) => ({ path: `/api/projects/${s.projectId}/events/?properties=${PROPERTY_FILTER}` }),
  },
  {
    id: 'events_page50',
    name: 'events list, 1M events, page 50 via next',
    pageLatency: true,
    request: (s) => ({ path: s.eventsPage50 ?? `/api/projects/${s.projectId}/events/` }),
  },
  // The Query API against the SQL a person would write for the same question (bench/baseline.ts).
  // One connection: an organization runs at most half the process's query slots at once (fairness), so
  // with more connections the API's figure would be its queue, not the cost of compiling and running.
  {
    id: 'query_count_by_event',
    name: 'query API, 1M events, count by event',
    connections: 1,
    request: (s) => ({
      path: `/api/projects/${s.projectId}/query/`,
      method: 'POST',
      body: hogql('select event, count() from events group by event'),
    }),
    baselineSql: (s) => `/sql/query_count_by_event/${s.projectId}`,
  },
  {
    id: 'query_property',
    name: 'query API, 1M events, property filter',
    connections: 1,
    request: (s) => ({
      path: `/api/projects/${s.projectId}/query/`,
      method: 'POST',
      body: hogql("select count() from events where properties.$browser = 'Firefox'"),
    }),
    baselineSql: (s) => `/sql/query_property/${s.projectId}`,
  },
  // Insight kinds (issue #29) against the SQL a person would write for the same chart, zero-filling in
  // the route; one connection, so that the figures are each request's latency, not a queue's. The
  // seeded events (1,000,000 by default, from 10,000 users) span 30 days, as a 30-day range does.
  {
    id: 'query_trends_daily',
    name: 'TrendsQuery, 1M events, daily count of one event over 30 days',
    connections: 1,
    request: (s) => ({ path: `/api/projects/${s.projectId}/query/`, method: 'POST', body: trends({}) }),
    baselineSql: (s) => `/sql/trends/${s.projectId}?math=total`,
  },
  {
    id: 'query_trends_dau',
    name: 'TrendsQuery, 1M events, daily unique users over 30 days',
    connections: 1,
    request: (s) => ({ path: `/api/projects/${s.projectId}/query/`, method: 'POST', body: trends({ math: 'dau' }) }),
    baselineSql: (s) => `/sql/trends/${s.projectId}?math=dau`,
  },
  {
    id: 'query_trends_breakdown',
    name: 'TrendsQuery, 1M events, daily count by $browser over 30 days',
    connections: 1,
    request: (s) => ({
      path: `/api/projects/${s.projectId}/query/`,
      method: 'POST',
      body: trends({}, { breakdownFilter: { breakdown: '$browser' } }),
    }),
    baselineSql: (s) => `/sql/trends/${s.projectId}?math=total&breakdown=$browser`,
  },
  {
    id: 'ingest',
    name: '/batch/ ingestion, 100 events per request',
    itemsPerRequest: 100,
    request: (s) => {
      // Bodies are built up front so the load generator spends its time sending, not serialising;
      // events carry no uuid, so a repeated body is stored again as new events.
      const bodies = Array.from({ length: 500 }, () => batchBody(s.apiToken));
      let next = 0;
      return {
        path: '/batch/',
        method: 'POST',
        body: bodies[0],
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
      };
    },
  },
];
