import {
  addSharePassword,
  changeSharing,
  readSharing,
  refreshSharing,
  removeSharePassword,
} from '../sharing/config.js';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { viewerOf } from '../dashboards/load.js';
import { insightSharing, insightSharingToEdit } from '../sharing/targets.js';

const toEdit = (req: ProjectRequest, insightId: number, enabling: unknown) =>
  insightSharingToEdit(req.server.db, req.tenant, viewerOf(req), insightId, enabling);

/** PostHog's sharing viewset for insights: one configuration per insight, stored once saved. */
export const insightSharingHandlers = {
  async insights_sharing_list(req) {
    return readSharing(
      req.server.db,
      await insightSharing(req.server.db, req.tenant.project_id, req.params.insight_id),
    );
  },

  async insights_sharing_partial_update(req) {
    const body = req.body ?? {};
    const target = await toEdit(req, req.params.insight_id, body.enabled);
    return changeSharing(req.server.db, req.tenant.project_id, target, body);
  },

  async insights_sharing_refresh_create(req) {
    const target = await toEdit(req, req.params.insight_id, undefined);
    return refreshSharing(req.server.db, req.tenant.project_id, target);
  },

  async insights_sharing_passwords_create(req, reply) {
    const target = await toEdit(req, req.params.insight_id, undefined);
    const answer = await addSharePassword(req.server.db, target, req.body ?? {}, req.principal.user);
    reply.code(201);
    return answer;
  },

  async insights_sharing_passwords_destroy(req, reply) {
    const target = await toEdit(req, req.params.insight_id, undefined);
    await removeSharePassword(req.server.db, target, req.params.password_id);
    return reply.code(204).send() as never;
  },
} satisfies SomeHandlers;
