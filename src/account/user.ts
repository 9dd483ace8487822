// Users: the User object as PostHog answers it, the user a path names, and PostHog's rules for
// changing one.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { isUuid } from '../core/ids.js';
import { pick } from '../core/pick.js';
import type { Db } from '../db/client.js';
import type { Principal } from '../auth/queries.js';
import { organizationExtras } from '../organizations/queries.js';
import {
  getActiveUserByUuid,
  normalizeEmail,
  ssoEnforcedFor,
  updateUser,
  userOrganizations,
  type UserInput,
  type UserRow,
} from '../users/queries.js';
import { instanceTag, serializeOrganization } from '../organizations/serialize.js';
import { serializeProjectBasic } from '../projects/serialize.js';
import { serializeUser } from '../users/serialize.js';

type UserBody = components['schemas']['PatchedUserRequest'];

const WRITABLE = [
  'first_name',
  'last_name',
  'anonymize_data',
  'toolbar_mode',
  'events_column_config',
  'has_seen_product_intro_for',
  'theme_mode',
  'hedgehog_config',
  'allow_sidebar_suggestions',
  'role_at_organization',
] as const;

/**
 * The User object: the user with their current organization (in full) and project. A current
 * organization or project the user no longer belongs to falls back as PostHog's does: the first
 * organization joined, then that organization's first project.
 */
export async function describeUser(db: Db, user: UserRow) {
  const memberships = await userOrganizations(db, user.id);
  const extras = await organizationExtras(
    db,
    memberships.map((m) => m.organization.id),
  );
  const current = memberships.find((m) => m.organization.id === user.current_organization_id) ?? memberships[0];
  const projects = [...extras.values()].flatMap((e) => e.projects);
  const currentProjects = current ? extras.get(current.organization.id)!.projects : [];
  const project =
    projects.find((p) => p.id === user.current_team_id) ??
    currentProjects[0] ??
    [...projects].sort((a, b) => a.id - b.id)[0];
  return serializeUser(user, {
    organization: current
      ? serializeOrganization(current.organization, current.level, extras.get(current.organization.id)!, instanceTag())
      : null,
    team: project ? serializeProjectBasic(project) : null,
    organizations: memberships.map(({ organization: o, level }) => ({
      id: o.id,
      name: o.name,
      slug: o.slug,
      logo_media_id: o.logo_media_id,
      membership_level: level as 1 | 8 | 15,
      members_can_use_personal_api_keys: o.members_can_use_personal_api_keys,
    })),
    has_sso_enforcement: current ? await ssoEnforcedFor(db, current.organization.id, user.email) : false,
  });
}

/** The user a key acts for, as the sign-up answer describes them. */
export const describePrincipal = (db: Db, principal: Principal) => describeUser(db, principal.user);

/**
 * The user the path names. PostHog's rule: `@me` is the caller; any other value needs a staff caller,
 * even the caller's own uuid.
 */
export async function loadUser(db: Db, caller: UserRow, uuid: string): Promise<UserRow> {
  if (uuid === '@me') return caller;
  if (!caller.is_staff)
    throw ApiError.permissionDenied("As a non-staff user you're only allowed to access the `@me` user instance.");
  const user = isUuid(uuid) ? await getActiveUserByUuid(db, uuid.toLowerCase()) : undefined;
  if (!user) throw ApiError.notFound();
  return user;
}

const doesNotExist = (attr: string, value: string) =>
  ApiError.validation(attr, `Object with id=${value} does not exist.`, 'does_not_exist');

/** PostHog's set_current_organization / set_current_team rules, checked against the target's memberships. */
async function currentChoice(
  db: Db,
  user: UserRow,
  body: UserBody,
): Promise<Pick<UserInput, 'current_organization_id' | 'current_team_id'>> {
  const { set_current_organization: orgId, set_current_team: teamId } = body;
  if (orgId === undefined && teamId === undefined) return {};
  const memberships = await userOrganizations(db, user.id);
  const extras = await organizationExtras(
    db,
    memberships.map((m) => m.organization.id),
  );
  const org = orgId === undefined ? undefined : memberships.find((m) => m.organization.id === orgId.toLowerCase());
  if (orgId !== undefined && !org) throw doesNotExist('set_current_organization', orgId);
  const team =
    teamId === undefined
      ? undefined
      : [...extras.values()].flatMap((e) => e.projects).find((p) => String(p.id) === teamId);
  if (teamId !== undefined && !team) throw doesNotExist('set_current_team', teamId);
  if (org) {
    if (team && team.organization_id !== org.organization.id) {
      throw ApiError.validation(
        'set_current_team',
        'Team must belong to the same organization in set_current_organization.',
      );
    }
    return {
      current_organization_id: org.organization.id,
      current_team_id: (team ?? extras.get(org.organization.id)!.projects[0])?.id ?? null,
    };
  }
  return { current_organization_id: team!.organization_id, current_team_id: team!.id };
}

/** PATCH and PUT of `target` by `caller`: PostHog's rules, then the stored user as it now is. */
export async function changeUser(db: Db, caller: UserRow, target: UserRow, body: UserBody): Promise<UserRow> {
  if (body.password !== undefined || body.current_password !== undefined) {
    throw ApiError.validation(
      body.password !== undefined ? 'password' : 'current_password',
      'This server has no password login.',
    );
  }
  if (body.is_staff !== undefined && !caller.is_staff) {
    throw ApiError.permissionDenied('You are not a staff user, contact your instance admin.');
  }
  const input: UserInput = { ...pick(body, WRITABLE), ...(await currentChoice(db, target, body)) };
  if (body.is_staff !== undefined) input.is_staff = body.is_staff;
  if (body.email !== undefined) input.email = normalizeEmail(body.email);
  if (body.notification_settings) {
    const stored = (target.partial_notification_settings ?? {}) as Record<string, unknown>;
    const { project_weekly_digest_disabled: digests, ...rest } = body.notification_settings;
    input.partial_notification_settings = {
      ...stored,
      ...rest,
      // PostHog merges the per-project map instead of replacing it.
      ...(digests
        ? {
            project_weekly_digest_disabled: {
              ...((stored.project_weekly_digest_disabled as object) ?? {}),
              ...digests,
            },
          }
        : {}),
    };
  }
  const user = await updateUser(db, target.id, input);
  if (!user) throw ApiError.validation('email', 'user with this email address already exists.', 'unique');
  return user;
}
