// What the shared-link tests share: a project's pageviews whose daily counts the tests know by hand, a
// dashboard of one trends insight and one text tile, and sharing it (or the insight) with settings.
import type { Db } from '../../src/db/client.js';
import { json, type TestContext } from './app.js';
import { insertEvents } from './event-rows.js';
import type { Tenant } from './factories.js';

const at = (s: string) => new Date(`${s}Z`);

/** `perDay` pageviews on 1, 2 and 3 May 2024 (noon UTC). */
export async function pageviews(db: Db, projectId: number, perDay: [number, number, number]): Promise<void> {
  const rows = perDay.flatMap((n, i) =>
    Array.from({ length: n }, (_, k) => ({
      event: '$pageview',
      timestamp: at(`2024-05-0${i + 1}T12:${String(k).padStart(2, '0')}:00`),
      properties: { $browser: 'Chrome' },
    })),
  );
  await insertEvents(db, projectId, rows);
}

/** A daily trends query over 1-3 May 2024, drawn as PostHog's `display` says. */
export const viewsQuery = (display = 'ActionsLineGraph') => ({
  kind: 'InsightVizNode',
  source: {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: '$pageview', math: 'total' }],
    dateRange: { date_from: '2024-05-01', date_to: '2024-05-03' },
    interval: 'day',
    trendsFilter: { display },
  },
});

export interface SharedSetup {
  dashboardId: number;
  insightId: number;
  token: string;
}

/** A dashboard (its name and text given) with a trends insight tile and a text tile, shared with `settings`. */
export async function sharedDashboard(
  ctx: TestContext,
  tenant: Tenant,
  opts: { name?: string; text?: string; settings?: Record<string, boolean>; display?: string } = {},
): Promise<SharedSetup> {
  const params = { project_id: tenant.project.id };
  const key = tenant.key;
  const dashboard = json<'dashboards_create'>(
    await ctx.call('dashboards_create', {
      key,
      params,
      body: { name: opts.name ?? 'Traffic', description: 'Daily pageviews' },
    }),
  );
  const insight = json<'insights_create'>(
    await ctx.call('insights_create', {
      key,
      params,
      body: { name: 'Pageviews', query: viewsQuery(opts.display) as never, dashboards: [dashboard.id] },
    }),
  );
  json<'dashboards_partial_update'>(
    await ctx.call('dashboards_partial_update', {
      key,
      params: { ...params, id: dashboard.id },
      body: { tiles: [{ text: { body: opts.text ?? '## Notes\n\nThe **launch** week.' } }] as never },
    }),
  );
  const sharing = json<'dashboards_sharing_partial_update'>(
    await ctx.call('dashboards_sharing_partial_update', {
      key,
      params: { ...params, dashboard_id: dashboard.id },
      body: { enabled: true, settings: opts.settings ?? {} },
    }),
  );
  return { dashboardId: dashboard.id, insightId: insight.id, token: sharing.access_token };
}

/** Chromium's Accept header for a page it navigates to. */
export const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
