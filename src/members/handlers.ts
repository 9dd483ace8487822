import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { paginated } from '../http/pagination.js';
import {
  getMemberByUserUuid,
  keysReachingOrganization,
  removeMember,
  setMemberLevel,
  type MemberRow,
} from './queries.js';
import { presentMemberPage, presentMembers } from './present.js';
import { isUuid } from '../core/ids.js';
import { ApiError } from '../core/errors.js';
import { Level } from '../core/levels.js';
import { pageOf } from '../core/paging.js';

interface Seat {
  userId: number;
  level: number;
}

/**
 * PostHog's OrganizationMembership.validate_update, in its order: each refusal is a 403 with its own
 * message. Without `newLevel` it is the object permission every write to a member goes through.
 */
function validateUpdate(caller: Seat, target: Seat, newLevel?: number): void {
  if (newLevel !== undefined) {
    if (target.userId === caller.userId) throw ApiError.permissionDenied("You can't change your own access level.");
    if (newLevel === Level.OWNER) {
      if (caller.level !== Level.OWNER) {
        throw ApiError.permissionDenied("You can only make another member owner if you're this organization's owner.");
      }
    } else if (newLevel > caller.level) {
      throw ApiError.permissionDenied(
        'You can only change access level of others to lower or equal to your current one.',
      );
    }
  }
  if (target.userId !== caller.userId) {
    if (caller.level < Level.ADMIN) throw ApiError.permissionDenied('You can only edit others if you are an admin.');
    if (target.level > caller.level)
      throw ApiError.permissionDenied('You can only edit others with level lower or equal to you.');
  }
}

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
const seat = (m: MemberRow): Seat => ({ userId: m.user.id, level: m.membership.level });

const WEEK_MS = 7 * 24 * 3_600_000;

async function update(req: FastifyRequest<{ Params: { user__uuid: string }; Body: { level?: number } | undefined }>) {
  const target = await pathMember(req);
  validateUpdate(callerSeat(req), seat(target));
  const level = req.body?.level;
  if (level === undefined) return (await presentMembers(req.server.db, [target]))[0]!;
  validateUpdate(callerSeat(req), seat(target), level);
  const membership = await setMemberLevel(req.server.db, req.tenant.organization_id, target.membership.id, level);
  if (!membership) throw ApiError.notFound();
  return (await presentMembers(req.server.db, [{ membership, user: target.user }]))[0]!;
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
    validateUpdate(callerSeat(req), seat(target));
    // PostHog removes a member through User.leave, which no owner passes, whoever asks.
    if (target.membership.level === Level.OWNER) {
      throw ApiError.validation(null, 'Cannot leave the organization as its owner!');
    }
    await removeMember(req.server.db, req.tenant.organization_id, target.user.id);
    reply.code(204);
  },
} satisfies SomeHandlers;
