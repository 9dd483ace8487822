import {
  addSharePassword,
  changeSharing,
  readSharing,
  refreshSharing,
  removeSharePassword,
} from '../sharing/config.js';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { viewerOf } from './load.js';
import { dashboardSharing, dashboardSharingToEdit } from '../sharing/targets.js';

const toEdit = (req: ProjectRequest, dashboardId: number, enabling: unknown) =>
  dashboardSharingToEdit(req.server.db, req.tenant, viewerOf(req), dashboardId, enabling);

/** PostHog's sharing viewset for dashboards: one configuration per dashboard, stored once saved. */
export const dashboardSharingHandlers = {
  async dashboards_sharing_list(req) {
    return readSharing(
      req.server.db,
      await dashboardSharing(req.server.db, req.tenant.project_id, req.params.dashboard_id),
    );
  },

  async dashboards_sharing_partial_update(req) {
    const body = req.body ?? {};
    const target = await toEdit(req, req.params.dashboard_id, body.enabled);
    return changeSharing(req.server.db, req.tenant.project_id, target, body);
  },

  async dashboards_sharing_refresh_create(req) {
    const target = await toEdit(req, req.params.dashboard_id, undefined);
    return refreshSharing(req.server.db, req.tenant.project_id, target);
  },

  async dashboards_sharing_passwords_create(req, reply) {
    const target = await toEdit(req, req.params.dashboard_id, undefined);
    const answer = await addSharePassword(req.server.db, target, req.body ?? {}, req.principal.user);
    reply.code(201);
    return answer;
  },

  async dashboards_sharing_passwords_destroy(req, reply) {
    const target = await toEdit(req, req.params.dashboard_id, undefined);
    await removeSharePassword(req.server.db, target, req.params.password_id);
    return reply.code(204).send() as never;
  },
} satisfies SomeHandlers;
