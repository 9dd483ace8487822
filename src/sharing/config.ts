// A sharing configuration (of a dashboard or an insight): presenting it with its passwords, changing
// it, and opening a public link (with a password or a share token when it is protected).
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import type { Db } from '../db/client.js';
import { getOrganization } from '../organizations/queries.js';
import type { SecretBox } from '../secrets/index.js';
import { newSharingToken } from '../tokens.js';
import {
  activePasswords,
  deactivatePassword,
  getSharing,
  insertPassword,
  isActivePassword,
  rotateSharing,
  saveSharing,
  sharedResource,
  type SharedRows,
  type SharingChange,
  type SharingRow,
  type SharingTarget,
} from './queries.js';
import { serializeSharing, unsavedSharing } from './serialize.js';
import { checkSharePassword, hashSharePassword, newSharePassword } from './share-passwords.js';
import { cleanSharingSettings } from './settings.js';
import { issueShareToken, readShareToken } from './share-tokens.js';

type Schemas = components['schemas'];
const MIN_PASSWORD_LENGTH = 8;

/** A sharing configuration with its active passwords. */
export async function presentSharing(db: Db, sharing: SharingRow): Promise<Schemas['SavedSharingConfiguration']> {
  return serializeSharing(sharing, await activePasswords(db, sharing.id));
}

/** The stored configuration, or (nothing is stored until the first save) an unsaved one with a new token. */
export async function readSharing(db: Db, target: SharingTarget): Promise<Schemas['SharingConfiguration']> {
  const sharing = await getSharing(db, target);
  return sharing ? presentSharing(db, sharing) : unsavedSharing(newSharingToken());
}

/**
 * PostHog's check_can_edit_sharing_configuration, its first half: a write that enables sharing is
 * refused while the organization forbids publicly shared resources (edit rights are the caller's to check).
 */
export async function requirePublicSharing(db: Db, organizationId: string, enabling: unknown): Promise<void> {
  if (!enabling) return;
  const organization = await getOrganization(db, organizationId);
  if (!organization?.allow_publicly_shared_resources) {
    throw ApiError.permissionDenied('Public sharing is disabled for this organization.');
  }
}

/** PATCH of a configuration: `enabled`, `password_required` and the display `settings`. */
export async function changeSharing(
  db: Db,
  projectId: number,
  target: SharingTarget,
  body: Schemas['PatchedSharingConfigurationRequest'],
): Promise<Schemas['SharingConfiguration']> {
  const change: SharingChange = { enabled: body.enabled, password_required: body.password_required };
  if (body.settings !== undefined) {
    const settings = cleanSharingSettings(body.settings);
    if (settings === 'invalid') throw ApiError.validation('settings', 'Invalid settings format');
    change.settings = settings;
  }
  const sharing = await saveSharing(db, projectId, target, change);
  if (!sharing) throw ApiError.notFound();
  return presentSharing(db, sharing);
}

export async function refreshSharing(db: Db, projectId: number, target: SharingTarget) {
  const sharing = await rotateSharing(db, projectId, target);
  if (!sharing) throw ApiError.notFound();
  return presentSharing(db, sharing);
}

/** A new password of a protected share; the clear value is answered once, or generated when not given. */
export async function addSharePassword(
  db: Db,
  target: SharingTarget,
  body: Schemas['SharePasswordRequest'],
  creator: { id: number; email: string },
) {
  const sharing = await getSharing(db, target);
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

/** Deactivates a password of this share; any other id is a 404 "Password not found". */
export async function removeSharePassword(db: Db, target: SharingTarget, passwordId: string): Promise<void> {
  const sharing = await getSharing(db, target);
  const id = /^\d{1,9}$/.test(passwordId) ? Number(passwordId) : undefined;
  if (!sharing || id === undefined || !(await deactivatePassword(db, sharing.id, id))) {
    throw ApiError.notFound('Password not found');
  }
}

/** The enabled share behind a public link, or a 404. */
export async function loadShared(db: Db, accessToken: string): Promise<SharedRows> {
  const shared = accessToken ? await sharedResource(db, accessToken) : undefined;
  if (!shared) throw ApiError.notFound();
  return shared;
}

/** Whether a share token (from `unlockShare`) opens this share now. */
export async function grantOpens(db: Db, box: SecretBox, sharing: SharingRow, token: string | undefined) {
  const grant = token ? readShareToken(box, token) : undefined;
  return (
    grant !== undefined &&
    grant.sharing === sharing.id &&
    grant.access_token === sharing.access_token &&
    (await isActivePassword(db, sharing.id, grant.password))
  );
}

/** A password-protected share opens only with a current share token: none is a 401, a bad one too. */
export async function requireGrant(
  db: Db,
  box: SecretBox,
  sharing: SharingRow,
  token: string | undefined,
): Promise<void> {
  if (!token) throw ApiError.notAuthenticated();
  if (!(await grantOpens(db, box, sharing, token))) {
    throw ApiError.authenticationFailed('The share token is invalid or has expired.');
  }
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
