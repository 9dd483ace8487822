import type { FastifyRequest } from 'fastify';
import { requireEdit } from '../dashboards/access.js';
import { permissionsOn, presentDashboard } from '../dashboards/present.js';
import {
  checkSharePassword,
  cleanSharingSettings,
  hashSharePassword,
  newSharePassword,
} from '../dashboards/share-passwords.js';
import { issueShareToken, readShareToken } from '../dashboards/share-tokens.js';
import type { Db } from '../db/client.js';
import type { DashboardRow } from '../db/queries/dashboards.js';
import { getOrganization } from '../db/queries/organizations.js';
import {
  activePasswords,
  deactivatePassword,
  getSharing,
  insertPassword,
  isActivePassword,
  rotateSharing,
  saveSharing,
  sharedDashboard,
  type SharingChange,
  type SharingRow,
} from '../db/queries/sharing.js';
import { parseRate, RateLimiter } from '../http/rate-limit.js';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { secretBox } from '../secrets/index.js';
import { serializeSharing, unsavedSharing } from '../serializers/dashboards.js';
import { newSharingToken } from '../tokens.js';
import { loadDashboard, viewerOf } from './dashboards.js';
import { ApiError } from '../core/errors.js';

const DASHBOARD_NOT_FOUND = 'Dashboard not found.';
/**
 * Password attempts per share and client address. Each check is a deliberately slow hash, so without
 * a cap anyone could both guess passwords and tie up the CPU. Counted in this process, like the key
 * throttles, and off with them (`RATE_LIMITS=off`).
 */
const unlockLimiter = new RateLimiter([parseRate('20/minute'), parseRate('200/hour')]);
const MIN_PASSWORD_LENGTH = 8;

async function present(db: Db, sharing: SharingRow) {
  return serializeSharing(sharing, await activePasswords(db, sharing.id));
}

/**
 * PostHog's check_can_edit_sharing_configuration: a write that enables sharing is refused while the
 * organization forbids publicly shared resources; then the caller needs edit rights on the dashboard.
 */
async function dashboardToEdit(req: ProjectRequest, dashboardId: number, enabling: unknown): Promise<DashboardRow> {
  const dashboard = await loadDashboard(req, dashboardId, { notFound: DASHBOARD_NOT_FOUND });
  if (enabling) {
    const organization = await getOrganization(req.server.db, req.tenant.organization_id);
    if (!organization?.allow_publicly_shared_resources) {
      throw ApiError.permissionDenied('Public sharing is disabled for this organization.');
    }
  }
  requireEdit(await permissionsOn(req.server.db, dashboard, viewerOf(req)));
  return dashboard;
}

/** The enabled share behind a public link; PostHog serves `/shared/<token>.json` and friends, so a suffix is dropped. */
async function loadShared(req: FastifyRequest, accessToken: string) {
  const token = accessToken.split('.')[0] ?? '';
  const shared = token ? await sharedDashboard(req.server.db, token) : undefined;
  if (!shared) throw ApiError.notFound();
  return shared;
}

/** A password-protected share opens only with a current share token from `shared_dashboard_create`. */
async function requireGrant(req: FastifyRequest, sharing: SharingRow): Promise<void> {
  const [scheme, token] = (req.headers.authorization ?? '').split(' ');
  if (scheme?.toLowerCase() !== 'bearer' || !token) throw ApiError.notAuthenticated();
  const grant = readShareToken(secretBox(req.server.config), token);
  const valid =
    grant !== undefined &&
    grant.sharing === sharing.id &&
    grant.access_token === sharing.access_token &&
    (await isActivePassword(req.server.db, sharing.id, grant.password));
  if (!valid) throw ApiError.authenticationFailed('The share token is invalid or has expired.');
}

/** PostHog's sharing viewset for dashboards: one configuration per dashboard, stored once saved. */
export const dashboardSharingHandlers = {
  async dashboards_sharing_list(req) {
    const dashboard = await loadDashboard(req, req.params.dashboard_id, { notFound: DASHBOARD_NOT_FOUND });
    const sharing = await getSharing(req.server.db, dashboard.id);
    // Nothing is stored until the first save, so each read of an unsaved configuration shows a new token.
    return sharing ? present(req.server.db, sharing) : unsavedSharing(newSharingToken());
  },

  async dashboards_sharing_partial_update(req) {
    const body = req.body ?? {};
    const dashboard = await dashboardToEdit(req, req.params.dashboard_id, body.enabled);
    const change: SharingChange = { enabled: body.enabled, password_required: body.password_required };
    if (body.settings !== undefined) {
      const settings = cleanSharingSettings(body.settings);
      if (settings === 'invalid') throw ApiError.validation('settings', 'Invalid settings format');
      change.settings = settings;
    }
    const sharing = await saveSharing(req.server.db, req.tenant.project_id, dashboard.id, change);
    if (!sharing) throw ApiError.notFound();
    return present(req.server.db, sharing);
  },

  async dashboards_sharing_refresh_create(req) {
    const dashboard = await dashboardToEdit(req, req.params.dashboard_id, undefined);
    const sharing = await rotateSharing(req.server.db, req.tenant.project_id, dashboard.id);
    if (!sharing) throw ApiError.notFound();
    return present(req.server.db, sharing);
  },

  async dashboards_sharing_passwords_create(req, reply) {
    const body = req.body ?? {};
    const dashboard = await dashboardToEdit(req, req.params.dashboard_id, undefined);
    const sharing = await getSharing(req.server.db, dashboard.id);
    if (!sharing?.password_required) {
      throw ApiError.validation(null, 'Password protection must be enabled before creating passwords');
    }
    if (body.raw_password && body.raw_password.length < MIN_PASSWORD_LENGTH) {
      throw ApiError.validation('raw_password', 'Password must be at least 8 characters long.');
    }
    const password = body.raw_password || newSharePassword();
    const row = await insertPassword(req.server.db, sharing.id, {
      password_hash: await hashSharePassword(password),
      note: body.note ?? '',
      created_by_id: req.principal.user.id,
    });
    reply.code(201);
    return {
      id: row.id,
      password,
      note: row.note,
      created_at: row.created_at.toISOString(),
      created_by_email: req.principal.user.email,
    };
  },

  async dashboards_sharing_passwords_destroy(req, reply) {
    const dashboard = await dashboardToEdit(req, req.params.dashboard_id, undefined);
    const sharing = await getSharing(req.server.db, dashboard.id);
    const id = /^\d{1,9}$/.test(req.params.password_id) ? Number(req.params.password_id) : undefined;
    if (!sharing || id === undefined || !(await deactivatePassword(req.server.db, sharing.id, id))) {
      throw ApiError.notFound('Password not found');
    }
    return reply.code(204).send() as never;
  },

  /** Public: no key. The token alone grants read access while sharing is enabled. */
  async shared_dashboard_retrieve(req) {
    const shared = await loadShared(req, req.params.access_token);
    if (shared.sharing.password_required) await requireGrant(req, shared.sharing);
    return presentDashboard(req.server.db, shared.dashboard, 'shared');
  },

  /** Public: PostHog's share page takes a password by POST and answers a token for the protected share. */
  async shared_dashboard_create(req) {
    const shared = await loadShared(req, req.params.access_token);
    if (!shared.sharing.password_required) return presentDashboard(req.server.db, shared.dashboard, 'shared');
    if (req.server.rateLimiter) unlockLimiter.hit(`${shared.sharing.id}:${req.ip}`);
    const attempt = req.body?.password;
    const passwords = typeof attempt === 'string' ? await activePasswords(req.server.db, shared.sharing.id) : [];
    for (const { password } of passwords) {
      if (await checkSharePassword(attempt!, password.password_hash)) {
        const grant = { sharing: shared.sharing.id, password: password.id, access_token: shared.sharing.access_token };
        return { shareToken: issueShareToken(secretBox(req.server.config), grant) };
      }
    }
    throw ApiError.authenticationFailed('Incorrect password');
  },
} satisfies SomeHandlers;
