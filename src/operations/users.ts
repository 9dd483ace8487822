import type { Db } from '../db/client.js';
import type { Principal } from '../db/queries/auth.js';
import type { SomeHandlers } from '../http/types.js';
import { currentOrganizationId, currentProjectId } from '../http/auth.js';
import { getProject } from '../db/queries/projects.js';
import { userOrganizations } from '../db/queries/users.js';
import { serializeUserBasic } from '../serializers/users.js';
import { serializeProjectBasic } from '../serializers/projects.js';

/** The User object: the principal's user with their current organization and project (also the sign-up answer). */
export async function describeUser(db: Db, principal: Principal) {
  const { user } = principal;
  const currentOrg = currentOrganizationId(principal);
  const currentProject = currentProjectId(principal);
  const [memberships, project] = await Promise.all([
    userOrganizations(db, user.id),
    currentProject === undefined ? undefined : getProject(db, currentProject),
  ]);
  const organizations = memberships.map(({ organization: o, level }) => ({
    id: o.id,
    name: o.name,
    slug: o.slug,
    logo_media_id: o.logo_media_id,
    membership_level: level as 1 | 8 | 15,
  }));
  return {
    ...serializeUserBasic(user),
    date_joined: user.date_joined.toISOString(),
    is_staff: user.is_staff,
    organization: organizations.find((o) => o.id === currentOrg) ?? null,
    team: project ? serializeProjectBasic(project) : null,
    organizations,
  };
}

export const userHandlers = {
  async users_retrieve(req) {
    return describeUser(req.server.db, req.principal);
  },
} satisfies SomeHandlers;
