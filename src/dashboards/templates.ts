/** A dashboard template in PostHog's shape, restricted to what this server can build: text tiles. */
export interface DashboardTemplate {
  template_name: string;
  dashboard_description: string;
  dashboard_filters: Record<string, unknown>;
  tags: string[];
  tiles: TemplateTile[];
}

export interface TemplateTile {
  type: 'TEXT';
  body: string;
  layouts?: Record<string, unknown> | undefined;
  color?: string | null | undefined;
}

/** PostHog's grid: two tiles of width 6 per row on `sm`, one column on `xs`. */
function gridLayout(index: number, height = 5): Record<string, unknown> {
  return {
    sm: { i: String(index), x: (index % 2) * 6, y: Math.floor(index / 2) * height, w: 6, h: height, minW: 3, minH: 5 },
    xs: { i: String(index), x: 0, y: index * height, w: 1, h: height, minW: 1, minH: 5 },
  };
}

const PRODUCT_ANALYTICS_SECTIONS: [title: string, text: string][] = [
  [
    'Daily active users (DAUs)',
    'Unique users who performed any event each day. The most direct measure of how many people rely on the product.',
  ],
  ['Weekly active users (WAUs)', 'Unique users per week. Smooths out weekday effects and shows the longer trend.'],
  ['Retention', 'Of the users who first appeared in a week, the share who came back in each following week.'],
  ['Growth accounting', 'Each period’s active users split into new, returning, resurrecting and dormant users.'],
  [
    'Referring domain (last 14 days)',
    'Where visitors came from: the top `$referring_domain` values of `$pageview` events.',
  ],
  [
    'Pageview funnel, by browser',
    'How many visitors move from their first `$pageview` to a second and a third, per `$browser`.',
  ],
];

const BUILT_IN: Record<string, DashboardTemplate> = {
  BLANK: {
    template_name: 'Blank dashboard',
    dashboard_description: '',
    dashboard_filters: {},
    tags: [],
    tiles: [],
  },
  DEFAULT_APP: {
    template_name: 'Product analytics',
    dashboard_description:
      'High-level overview of your product including daily active users, weekly active users, retention, and growth ' +
      'accounting.',
    dashboard_filters: {},
    tags: [],
    tiles: PRODUCT_ANALYTICS_SECTIONS.map(([title, text], i) => ({
      type: 'TEXT',
      body: `## ${title}\n\n${text}`,
      layouts: gridLayout(i),
      color: null,
    })),
  },
};

/** A built-in template by key (`DEFAULT_APP`) or by its name (`Product analytics`), as PostHog looks them up. */
export function findTemplate(keyOrName: string): DashboardTemplate | undefined {
  if (Object.hasOwn(BUILT_IN, keyOrName)) return BUILT_IN[keyOrName];
  return Object.values(BUILT_IN).find((t) => t.template_name === keyOrName);
}

export const TEMPLATE_KEYS = Object.keys(BUILT_IN);

/**
 * PostHog's product templates for `create_unlisted_dashboard`, by tag. PostHog builds insight tiles
 * from these; this server keeps no insights, so each chart becomes a text tile naming it and stating
 * what it counts, at the chart's place on the grid.
 */
function llmTile(i: number, title: string, text: string, x: number, y: number, w: number): TemplateTile {
  return {
    type: 'TEXT',
    body: `## ${title}\n\n${text}`,
    layouts: {
      sm: { h: 5, w, x, y, minH: 5, minW: 3 },
      xs: { h: 5, w: 1, x: 0, y: i * 5, minH: 5, minW: 3 },
    },
    color: null,
  };
}

const LLM_CHARTS: [title: string, text: string, x: number, y: number, w: number][] = [
  ['Traces', 'Distinct `$ai_trace_id` values of `$ai_generation` events per day, last 7 days.', 0, 0, 4],
  [
    'Generative AI users',
    'Daily users with `$ai_generation` events. To count users, set `distinct_id` in LLM tracking.',
    4,
    0,
    4,
  ],
  ['Total cost (USD)', 'Sum of `$ai_total_cost_usd` over `$ai_generation` events, last 7 days.', 8, 0, 4],
  ['Cost per user (USD)', "Average cost for each generative AI user active in the data point's period.", 0, 5, 6],
  ['Cost by model (USD)', 'Sum of `$ai_total_cost_usd` by `$ai_model`, last 7 days.', 6, 5, 6],
  ['Generation calls', 'Count of `$ai_generation` events per day, last 7 days.', 0, 10, 4],
  ['AI Errors', 'Failed AI generation calls: `$ai_generation` events with `$ai_is_error` true.', 4, 10, 4],
  [
    'Generation latency by model (median)',
    'Median `$ai_latency` of `$ai_generation` events by `$ai_model`, in seconds.',
    8,
    10,
    4,
  ],
  ['Generations by HTTP status', 'Count of `$ai_generation` events by `$ai_http_status`, last 7 days.', 0, 15, 4],
];

const UNLISTED: Record<string, DashboardTemplate> = {
  'llm-analytics': {
    template_name: 'LLM Analytics Default',
    dashboard_description: 'Overview of your LLM usage, costs, and performance',
    dashboard_filters: { date_from: '-7d' },
    tags: ['llm-analytics'],
    tiles: LLM_CHARTS.map(([title, text, x, y, w], i) => llmTile(i, title, text, x, y, w)),
  },
};

/** The product template behind an unlisted dashboard's tag (PostHog's TEMPLATE_MAP). */
export function findUnlistedTemplate(tag: string): DashboardTemplate | undefined {
  return Object.hasOwn(UNLISTED, tag) ? UNLISTED[tag] : undefined;
}
