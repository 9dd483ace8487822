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
  ['Daily active users (DAUs)', 'Unique users who performed any event each day. The most direct measure of how many people rely on the product.'],
  ['Weekly active users (WAUs)', 'Unique users per week. Smooths out weekday effects and shows the longer trend.'],
  ['Retention', 'Of the users who first appeared in a week, the share who came back in each following week.'],
  ['Growth accounting', 'Each period’s active users split into new, returning, resurrecting and dormant users.'],
  ['Referring domain (last 14 days)', 'Where visitors came from: the top `$referring_domain` values of `$pageview` events.'],
  ['Pageview funnel, by browser', 'How many visitors move from their first `$pageview` to a second and a third, per `$browser`.'],
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
      'High-level overview of your product including daily active users, weekly active users, retention, and growth accounting.',
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
