import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { paginated } from '../http/pagination.js';
import { getMemberByUserUuid, keysReachingOrganization, type MemberRow } from './queries.js';
import { presentMemberPage } from './present.js';
import { changeMember, removeMemberAs, type Seat } from './update.js';
import { isUuid } from '../core/ids.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';

/** The member named by the path: a user uuid, or `@me` for the caller. */
async function pathMember(req: FastifyRequest<{ Params: { user__uuid: string } }>): Promise<MemberRow> {
  const raw = req.params.user__uuid;
  const uuid = raw === '@me' ? req.principal.user.uuid : raw;
  if (!isUuid(uuid)) throw ApiError.notFound();
  const target = await getMemberByUserUuid(req.server.db, req.tenant.organization_id, uuid.toLowerCase());
  if (!target) throw ApiError.notFound();
  return target;
}

const callerSeat = (req: FastifyRequest): Seat => ({ userId: req.principal.user.id, level: req.tenant.level });

const WEEK_MS = 7 * 24 * 3_600_000;

async function update(req: FastifyRequest<{ Params: { user__uuid: string }; Body: { level?: number } | undefined }>) {
  const target = await pathMember(req);
  return changeMember(req.server.db, req.tenant.organization_id, callerSeat(req), target, req.body?.level);
}

export const memberHandlers = {
  async members_list(req) {
    const page = pageOf(req.query);
    const { email, order, updated_after } = req.query;
    const { count, results } = await presentMemberPage(
      req.server.db,
      req.tenant.organization_id,
      {
        ...(email !== undefined ? { email } : {}),
        ...(updated_after ? { updated_after: new Date(updated_after) } : {}),
        ascending: order === 'joined_at',
      },
      page,
    );
    return paginated(req, page, count, results);
  },

  async members_partial_update(req) {
    return update(req);
  },

  async members_update(req) {
    return update(req);
  },

  async members_scoped_api_keys_retrieve(req) {
    const target = await pathMember(req);
    const keys = await keysReachingOrganization(req.server.db, req.tenant.organization_id, target.user.id);
    const weekAgo = Date.now() - WEEK_MS;
    return {
      has_keys: keys.length > 0,
      has_keys_active_last_week: keys.some((k) => k.last_used_at && k.last_used_at.getTime() >= weekAgo),
      keys: keys.map((k) => ({ name: k.label, last_used_at: k.last_used_at?.toISOString() ?? null })),
    };
  },

  async members_destroy(req, reply) {
    const target = await pathMember(req);
    await removeMemberAs(req.server.db, req.tenant.organization_id, callerSeat(req), target);
    reply.code(204);
  },
} satisfies SomeHandlers;
