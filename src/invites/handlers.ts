import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import { deleteInvite, listInvites } from './queries.js';
import { createInvites, presentInvites } from './create.js';
import { isUuid } from '../core/ids.js';

export const inviteHandlers = {
  async invites_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listInvites(req.server.db, req.tenant.organization_id, page);
    return paginated(req, page, count, await presentInvites(req.server.db, rows));
  },

  async invites_create(req, reply) {
    const { db, config } = req.server;
    const rows = await createInvites(db, config, req.tenant, req.principal.user, [req.body], {
      bulk: false,
      log: req.log,
    });
    reply.code(201);
    return (await presentInvites(db, rows))[0]!;
  },

  async invites_bulk_create(req, reply) {
    const { db, config } = req.server;
    const rows = await createInvites(db, config, req.tenant, req.principal.user, req.body, {
      bulk: true,
      log: req.log,
    });
    reply.code(201);
    return presentInvites(db, rows);
  },

  async invites_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    if (!isUuid(req.params.id) || !(await deleteInvite(req.server.db, req.tenant.organization_id, req.params.id))) {
      throw ApiError.notFound();
    }
    reply.code(204);
  },
} satisfies SomeHandlers;
