import { requireEdit } from '../dashboards/access.js';
import { permissionsOn, presentDashboard } from '../dashboards/present.js';
import { getSharing, rotateSharing, saveSharing, sharedDashboard } from '../db/queries/sharing.js';
import { ApiError } from '../http/errors.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeSharing } from '../serializers/dashboards.js';
import { newSharingToken } from '../tokens.js';
import { loadDashboard, viewerOf } from './dashboards.js';

const DASHBOARD_NOT_FOUND = 'Dashboard not found.';

/** PostHog's sharing viewset for dashboards: one configuration per dashboard, stored once saved. */
export const dashboardSharingHandlers = {
  async dashboards_sharing_list(req) {
    const dashboard = await loadDashboard(req, req.params.dashboard_id, { notFound: DASHBOARD_NOT_FOUND });
    const sharing = await getSharing(req.server.db, dashboard.id);
    // Nothing is stored until the first save, so each read of an unsaved configuration shows a new token.
    return sharing ? serializeSharing(sharing) : { created_at: null, enabled: false, access_token: newSharingToken() };
  },

  async dashboards_sharing_partial_update(req) {
    const dashboard = await loadDashboard(req, req.params.dashboard_id, { notFound: DASHBOARD_NOT_FOUND });
    requireEdit(await permissionsOn(req.server.db, dashboard, viewerOf(req)));
    return serializeSharing(await saveSharing(req.server.db, dashboard.id, { enabled: req.body?.enabled }));
  },

  async dashboards_sharing_refresh_create(req) {
    const dashboard = await loadDashboard(req, req.params.dashboard_id, { notFound: DASHBOARD_NOT_FOUND });
    requireEdit(await permissionsOn(req.server.db, dashboard, viewerOf(req)));
    return serializeSharing(await rotateSharing(req.server.db, dashboard.id));
  },

  /** Public: no key. The token alone grants read access while sharing is enabled. */
  async shared_dashboard_retrieve(req) {
    // PostHog serves `/shared/<token>.json` and friends; the token itself never holds a dot.
    const token = req.params.access_token.split('.')[0] ?? '';
    const dashboard = token ? await sharedDashboard(req.server.db, token) : undefined;
    if (!dashboard) throw ApiError.notFound();
    return presentDashboard(req.server.db, dashboard, 'shared');
  },
} satisfies SomeHandlers;
