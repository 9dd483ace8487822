// A dashboard's sharing configuration: who may change it, presenting it with its passwords, and
// opening a public link (with a password or a share token when it is protected).
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import type { ProjectTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import { getDashboard, type DashboardRow } from './queries.js';
import { getOrganization } from '../organizations/queries.js';
import {
  activePasswords,
  getSharing,
  insertPassword,
  isActivePassword,
  sharedDashboard,
  type SharingRow,
} from './sharing-queries.js';
import type { SecretBox } from '../secrets/index.js';
import { serializeSharing } from './serialize.js';
import { requireEdit, type Viewer } from '../dashboard-access/rules.js';
import { permissionsOn } from './present.js';
import { checkSharePassword, hashSharePassword, newSharePassword } from './share-passwords.js';
import { issueShareToken, readShareToken } from './share-tokens.js';

export const DASHBOARD_NOT_FOUND = 'Dashboard not found.';
const MIN_PASSWORD_LENGTH = 8;

/** A sharing configuration with its active passwords. */
export async function presentSharing(db: Db, sharing: SharingRow) {
  return serializeSharing(sharing, await activePasswords(db, sharing.id));
}

/** A dashboard of the project whose sharing the viewer may read; any other id is a 404. */
export async function loadSharingDashboard(db: Db, projectId: number, id: number): Promise<DashboardRow> {
  const row = await getDashboard(db, projectId, id);
  if (!row) throw ApiError.notFound(DASHBOARD_NOT_FOUND);
  return row;
}

/**
 * PostHog's check_can_edit_sharing_configuration: a write that enables sharing is refused while the
 * organization forbids publicly shared resources; then the viewer needs edit rights on the dashboard.
 */
export async function dashboardToEdit(
  db: Db,
  tenant: ProjectTenant,
  viewer: Viewer,
  dashboardId: number,
  enabling: unknown,
): Promise<DashboardRow> {
  const dashboard = await loadSharingDashboard(db, tenant.project_id, dashboardId);
  if (enabling) {
    const organization = await getOrganization(db, tenant.organization_id);
    if (!organization?.allow_publicly_shared_resources) {
      throw ApiError.permissionDenied('Public sharing is disabled for this organization.');
    }
  }
  requireEdit(await permissionsOn(db, dashboard, viewer));
  return dashboard;
}

/** A new password of a protected share; the clear value is answered once, or generated when not given. */
export async function addSharePassword(
  db: Db,
  dashboard: DashboardRow,
  body: components['schemas']['SharePasswordRequest'],
  creator: { id: number; email: string },
) {
  const sharing = await getSharing(db, dashboard.id);
  if (!sharing?.password_required) {
    throw ApiError.validation(null, 'Password protection must be enabled before creating passwords');
  }
  if (body.raw_password && body.raw_password.length < MIN_PASSWORD_LENGTH) {
    throw ApiError.validation('raw_password', 'Password must be at least 8 characters long.');
  }
  const password = body.raw_password || newSharePassword();
  const row = await insertPassword(db, sharing.id, {
    password_hash: await hashSharePassword(password),
    note: body.note ?? '',
    created_by_id: creator.id,
  });
  return {
    id: row.id,
    password,
    note: row.note,
    created_at: row.created_at.toISOString(),
    created_by_email: creator.email,
  };
}

/**
 * The enabled share behind a public link; PostHog serves `/shared/<token>.json` and friends, so a suffix is dropped.
 */
export async function loadShared(db: Db, accessToken: string) {
  const token = accessToken.split('.')[0] ?? '';
  const shared = token ? await sharedDashboard(db, token) : undefined;
  if (!shared) throw ApiError.notFound();
  return shared;
}

/** A password-protected share opens only with a current share token from `shared_dashboard_create`. */
export async function requireGrant(
  db: Db,
  box: SecretBox,
  sharing: SharingRow,
  authorization: string | undefined,
): Promise<void> {
  const [scheme, token] = (authorization ?? '').split(' ');
  if (scheme?.toLowerCase() !== 'bearer' || !token) throw ApiError.notAuthenticated();
  const grant = readShareToken(box, token);
  const valid =
    grant !== undefined &&
    grant.sharing === sharing.id &&
    grant.access_token === sharing.access_token &&
    (await isActivePassword(db, sharing.id, grant.password));
  if (!valid) throw ApiError.authenticationFailed('The share token is invalid or has expired.');
}

/** A share token for `attempt` when it is one of the share's active passwords; otherwise a 401. */
export async function unlockShare(db: Db, box: SecretBox, sharing: SharingRow, attempt: unknown) {
  const passwords = typeof attempt === 'string' ? await activePasswords(db, sharing.id) : [];
  for (const { password } of passwords) {
    if (typeof attempt === 'string' && (await checkSharePassword(attempt, password.password_hash))) {
      const grant = { sharing: sharing.id, password: password.id, access_token: sharing.access_token };
      return { shareToken: issueShareToken(box, grant) };
    }
  }
  throw ApiError.authenticationFailed('Incorrect password');
}
