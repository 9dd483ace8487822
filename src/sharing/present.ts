// What a shared link shows: the dashboard (with its insight tiles' results) or the insight, as an
// anonymous reader sees it, over the viewer's date range when the owner allowed one.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import type { Db } from '../db/client.js';
import { presentDashboard } from '../dashboards/present.js';
import type { CacheContext, RefreshMode } from '../insights/cache.js';
import { presentInsight } from '../insights/present.js';
import { isDateText } from '../query/kinds/date-range.js';
import type { SharedRows } from './queries.js';
import { settingsOf, type SharingSettings } from './settings.js';

type Schemas = components['schemas'];

/**
 * A shared view computes what is not freshly cached and waits for it: its reader has no way to poll an
 * asynchronous query (PostHog's shared views start one), and the cache bounds the work to one
 * computation per insight and freshness period, per date range.
 */
const SHARED_MODE: RefreshMode = 'blocking';

/** The date range a viewer asked for; `date_to` null is now. */
export interface ViewerRange {
  date_from: string | null;
  date_to: string | null;
}

/**
 * The viewer's date range from the query string: none when neither bound is given; a 403 when the
 * share's settings do not allow one; a 400 on a value that is not a date.
 */
export function viewerRange(
  settings: SharingSettings,
  q: { date_from?: string | undefined; date_to?: string | undefined },
): ViewerRange | undefined {
  const from = q.date_from?.trim() || null;
  const to = q.date_to?.trim() || null;
  if (q.date_from === undefined && q.date_to === undefined) return undefined;
  if (!settings.allowDateRangeChange) {
    throw ApiError.permissionDenied('Changing the date range is not allowed for this share.');
  }
  if (from !== null && !isDateText(from)) {
    throw ApiError.validation('date_from', `"${from}" is not a date: use a date, a date-time or a relative date.`);
  }
  if (to !== null && (to === 'all' || !isDateText(to))) {
    throw ApiError.validation('date_to', `"${to}" is not a date: use a date, a date-time or a relative date.`);
  }
  return { date_from: from, date_to: to };
}

/** PostHog's hideExtraDetails: who made and changed things is left out (null). */
function withoutPeople<T extends object>(item: T): T {
  const out = { ...item } as Record<string, unknown>;
  for (const key of ['created_by', 'last_modified_by']) if (key in out) out[key] = null;
  return out as T;
}

export interface SharedView {
  dashboard?: Schemas['Dashboard'];
  insight?: Schemas['Insight'];
  settings: SharingSettings;
}

/** The shared dashboard or insight with its results, as the shared link's reader sees it. */
export async function presentShared(
  db: Db,
  shared: SharedRows,
  cache: CacheContext,
  range: ViewerRange | undefined,
): Promise<SharedView> {
  const settings = settingsOf(shared.sharing.settings);
  const hide = settings.hideExtraDetails === true;
  if (shared.dashboard) {
    const d = shared.dashboard;
    const filters = range ? { ...d.filters, ...range } : undefined;
    const dashboard = await presentDashboard(db, d, 'shared', { mode: SHARED_MODE, cache, filters });
    if (!hide) return { dashboard, settings };
    const tiles = dashboard.tiles?.map((t) => ({
      ...t,
      insight: t.insight ? withoutPeople(t.insight) : t.insight,
      text: t.text ? withoutPeople(t.text) : t.text,
    }));
    return { dashboard: { ...withoutPeople(dashboard), tiles }, settings };
  }
  const context = range ? { filters: { ...range }, variables: {} } : undefined;
  const insight = await presentInsight(db, shared.insight, {
    audience: 'shared',
    mode: SHARED_MODE,
    cache,
    dashboard: context,
  });
  return { insight: hide ? withoutPeople(insight) : insight, settings };
}

/** PostHog's exported data of a share (`/shared/<token>.json`): the resource and the settings as flags. */
export function exportedData(shared: SharedRows, view: SharedView, range: ViewerRange | undefined) {
  const flags: Record<string, true> = {};
  for (const [key, on] of Object.entries(view.settings)) if (on) flags[key] = true;
  return {
    type: 'scene' as const,
    accessToken: shared.sharing.access_token,
    ...(view.dashboard ? { dashboard: view.dashboard } : {}),
    ...(view.insight ? { insight: view.insight } : {}),
    ...flags,
    ...(range ? { dateRange: range } : {}),
  };
}
