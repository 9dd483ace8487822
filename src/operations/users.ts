import type { SomeHandlers } from '../http/types.js';
import { currentOrganizationId, currentProjectId } from '../http/auth.js';
import { getProject } from '../db/queries/projects.js';
import { userOrganizations } from '../db/queries/users.js';
import { serializeUserBasic } from '../serializers/users.js';
import { serializeProjectBasic } from '../serializers/projects.js';

export const userHandlers = {
  async users_retrieve(req) {
    const { user } = req.principal;
    const currentOrg = currentOrganizationId(req.principal);
    const currentProject = currentProjectId(req.principal);
    const [memberships, project] = await Promise.all([
      userOrganizations(req.server.db, user.id),
      currentProject === undefined ? undefined : getProject(req.server.db, currentProject),
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
  },
} satisfies SomeHandlers;
