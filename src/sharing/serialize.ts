import type { components } from '../../generated/api.js';
import type { SharePasswordWithCreator, SharingRow } from './queries.js';

type Schemas = components['schemas'];

export function serializeSharePassword({
  password,
  created_by_email,
}: SharePasswordWithCreator): Schemas['SharePassword'] {
  return {
    id: password.id,
    created_at: password.created_at.toISOString(),
    note: password.note,
    created_by_email: created_by_email ?? 'deleted user',
    is_active: password.is_active,
  };
}

export function serializeSharing(
  s: SharingRow,
  passwords: SharePasswordWithCreator[],
): Schemas['SavedSharingConfiguration'] {
  return {
    created_at: s.created_at.toISOString(),
    enabled: s.enabled,
    access_token: s.access_token,
    settings: s.settings,
    password_required: s.password_required,
    share_passwords: passwords.map(serializeSharePassword),
  };
}

/** A configuration not saved yet: PostHog shows a fresh token and no passwords until the first save. */
export function unsavedSharing(accessToken: string): Schemas['SharingConfiguration'] {
  return {
    created_at: null,
    enabled: false,
    access_token: accessToken,
    settings: null,
    password_required: false,
    share_passwords: [],
  };
}
