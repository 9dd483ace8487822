import { presentDashboard } from './present.js';
import { cleanSharingSettings } from './share-passwords.js';
import {
  addSharePassword,
  dashboardToEdit,
  loadShared,
  loadSharingDashboard,
  presentSharing,
  requireGrant,
  unlockShare,
} from './sharing.js';
import { viewerOf } from './load.js';
import { deactivatePassword, getSharing, rotateSharing, saveSharing, type SharingChange } from './sharing-queries.js';
import { parseRate, RateLimiter } from '../http/rate-limit.js';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { secretBox } from '../secrets/index.js';
import { unsavedSharing } from './serialize.js';
import { newSharingToken } from '../tokens.js';
import { ApiError } from '../core/errors.js';

/**
 * Password attempts per share and client address. Each check is a deliberately slow hash, so without
 * a cap anyone could both guess passwords and tie up the CPU. Counted in this process, like the key
 * throttles, and off with them (`RATE_LIMITS=off`).
 */
const unlockLimiter = new RateLimiter([parseRate('20/minute'), parseRate('200/hour')]);

const toEdit = (req: ProjectRequest, dashboardId: number, enabling: unknown) =>
  dashboardToEdit(req.server.db, req.tenant, viewerOf(req), dashboardId, enabling);

/** PostHog's sharing viewset for dashboards: one configuration per dashboard, stored once saved. */
export const dashboardSharingHandlers = {
  async dashboards_sharing_list(req) {
    const dashboard = await loadSharingDashboard(req.server.db, req.tenant.project_id, req.params.dashboard_id);
    const sharing = await getSharing(req.server.db, dashboard.id);
    // Nothing is stored until the first save, so each read of an unsaved configuration shows a new token.
    return sharing ? presentSharing(req.server.db, sharing) : unsavedSharing(newSharingToken());
  },

  async dashboards_sharing_partial_update(req) {
    const body = req.body ?? {};
    const dashboard = await toEdit(req, req.params.dashboard_id, body.enabled);
    const change: SharingChange = { enabled: body.enabled, password_required: body.password_required };
    if (body.settings !== undefined) {
      const settings = cleanSharingSettings(body.settings);
      if (settings === 'invalid') throw ApiError.validation('settings', 'Invalid settings format');
      change.settings = settings;
    }
    const sharing = await saveSharing(req.server.db, req.tenant.project_id, dashboard.id, change);
    if (!sharing) throw ApiError.notFound();
    return presentSharing(req.server.db, sharing);
  },

  async dashboards_sharing_refresh_create(req) {
    const dashboard = await toEdit(req, req.params.dashboard_id, undefined);
    const sharing = await rotateSharing(req.server.db, req.tenant.project_id, dashboard.id);
    if (!sharing) throw ApiError.notFound();
    return presentSharing(req.server.db, sharing);
  },

  async dashboards_sharing_passwords_create(req, reply) {
    const dashboard = await toEdit(req, req.params.dashboard_id, undefined);
    const answer = await addSharePassword(req.server.db, dashboard, req.body ?? {}, req.principal.user);
    reply.code(201);
    return answer;
  },

  async dashboards_sharing_passwords_destroy(req, reply) {
    const dashboard = await toEdit(req, req.params.dashboard_id, undefined);
    const sharing = await getSharing(req.server.db, dashboard.id);
    const id = /^\d{1,9}$/.test(req.params.password_id) ? Number(req.params.password_id) : undefined;
    if (!sharing || id === undefined || !(await deactivatePassword(req.server.db, sharing.id, id))) {
      throw ApiError.notFound('Password not found');
    }
    return reply.code(204).send() as never;
  },

  /** Public: no key. The token alone grants read access while sharing is enabled. */
  async shared_dashboard_retrieve(req) {
    const shared = await loadShared(req.server.db, req.params.access_token);
    if (shared.sharing.password_required) {
      await requireGrant(req.server.db, secretBox(req.server.config), shared.sharing, req.headers.authorization);
    }
    return presentDashboard(req.server.db, shared.dashboard, 'shared');
  },

  /** Public: PostHog's share page takes a password by POST and answers a token for the protected share. */
  async shared_dashboard_create(req) {
    const shared = await loadShared(req.server.db, req.params.access_token);
    if (!shared.sharing.password_required) return presentDashboard(req.server.db, shared.dashboard, 'shared');
    if (req.server.rateLimiter) unlockLimiter.hit(`${shared.sharing.id}:${req.ip}`);
    return unlockShare(req.server.db, secretBox(req.server.config), shared.sharing, req.body?.password);
  },
} satisfies SomeHandlers;
