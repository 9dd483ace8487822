import { dashboardPermissions, Privilege, requireEdit, Restriction } from '../dashboard-access/rules.js';
import { permissionsOn } from './present.js';
import {
  deleteCollaborator,
  findActiveUserByUuid,
  findCollaborator,
  insertCollaborator,
  listCollaborators,
  membershipLevel,
} from './collaborator-queries.js';
import { ApiError } from '../core/errors.js';
import type { SomeHandlers } from '../http/types.js';
import { serializeCollaborator } from './serialize.js';
import { loadDashboard, viewerOf } from './load.js';

const DASHBOARD_NOT_FOUND = 'Dashboard not found.';

/** PostHog's ee/api/dashboard_collaborator.py, with its checks in its order and its messages. */
export const dashboardCollaboratorHandlers = {
  async dashboards_collaborators_list(req) {
    const dashboard = await loadDashboard(req.server.db, req.tenant.project_id, req.params.dashboard_id, {
      notFound: DASHBOARD_NOT_FOUND,
    });
    return (await listCollaborators(req.server.db, dashboard.id)).map(serializeCollaborator);
  },

  async dashboards_collaborators_create(req, reply) {
    const db = req.server.db;
    const dashboard = await loadDashboard(req.server.db, req.tenant.project_id, req.params.dashboard_id, {
      notFound: DASHBOARD_NOT_FOUND,
    });
    requireEdit(await permissionsOn(db, dashboard, viewerOf(req)));
    if (dashboard.restriction_level <= Restriction.EVERYONE_IN_PROJECT_CAN_EDIT) {
      throw ApiError.validation(null, 'Cannot add collaborators to a dashboard on the lowest restriction level.');
    }
    if (req.body.level !== Privilege.CAN_EDIT) {
      throw ApiError.validation(null, 'Only edit access can be explicitly specified currently.');
    }
    const user = await findActiveUserByUuid(db, req.body.user_uuid);
    if (!user) throw ApiError.validation(null, 'User does not exist.');
    const level = await membershipLevel(db, req.tenant.organization_id, user.id);
    if (level === undefined)
      throw ApiError.validation(null, 'Cannot add collaborators that have no access to the project.');
    if (dashboardPermissions(dashboard, { id: user.id, level }, null).can_restrict) {
      throw ApiError.validation(
        null,
        'Cannot add collaborators that already have inherent access (the dashboard owner or a project admins).',
      );
    }
    const collaborator = await insertCollaborator(db, req.tenant.project_id, dashboard.id, user.id, req.body.level);
    if (!collaborator) throw ApiError.validation(null, 'User already is a collaborator.');
    reply.code(201);
    return serializeCollaborator({ collaborator, user });
  },

  async dashboards_collaborators_destroy(req, reply) {
    const db = req.server.db;
    const dashboard = await loadDashboard(req.server.db, req.tenant.project_id, req.params.dashboard_id, {
      notFound: DASHBOARD_NOT_FOUND,
    });
    requireEdit(await permissionsOn(db, dashboard, viewerOf(req)));
    const found = await findCollaborator(db, dashboard.id, req.params.user__uuid);
    if (!found) throw ApiError.notFound();
    if (dashboard.restriction_level <= Restriction.EVERYONE_IN_PROJECT_CAN_EDIT) {
      throw ApiError.validation(null, 'Cannot remove collaborators from a dashboard on the lowest restriction level.');
    }
    await deleteCollaborator(db, req.tenant.project_id, dashboard.id, found.collaborator.id);
    reply.code(204);
  },
} satisfies SomeHandlers;
