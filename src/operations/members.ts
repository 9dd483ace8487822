import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../http/errors.js';
import { Level } from '../http/access.js';
import { pageOf, paginated } from '../http/pagination.js';
import { getMemberByUserUuid, listMembers, removeMember, setMemberLevel, type MemberRow } from '../db/queries/members.js';
import { serializeMember } from '../serializers/members.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
      throw ApiError.permissionDenied('You can only change access level of others to lower or equal to your current one.');
    }
  }
  if (target.userId !== caller.userId) {
    if (caller.level < Level.ADMIN) throw ApiError.permissionDenied('You can only edit others if you are an admin.');
    if (target.level > caller.level) throw ApiError.permissionDenied('You can only edit others with level lower or equal to you.');
  }
}

/** The member named by the path: a user uuid, or `@me` for the caller. */
async function pathMember(req: FastifyRequest<{ Params: { user__uuid: string } }>): Promise<MemberRow> {
  const raw = req.params.user__uuid;
  const uuid = raw === '@me' ? req.principal.user.uuid : raw;
  if (!UUID.test(uuid)) throw ApiError.notFound();
  const target = await getMemberByUserUuid(req.server.db, req.tenant.organization_id, uuid.toLowerCase());
  if (!target) throw ApiError.notFound();
  return target;
}

const callerSeat = (req: FastifyRequest): Seat => ({ userId: req.principal.user.id, level: req.tenant.level });
const seat = (m: MemberRow): Seat => ({ userId: m.user.id, level: m.membership.level });

export const memberHandlers = {
  async members_list(req) {
    const page = pageOf(req.query);
    const { email, order, updated_after } = req.query;
    const { count, rows } = await listMembers(
      req.server.db,
      req.tenant.organization_id,
      {
        ...(email !== undefined ? { email } : {}),
        ...(updated_after ? { updated_after: new Date(updated_after) } : {}),
        ascending: order === 'joined_at',
      },
      page,
    );
    return paginated(req, page, count, rows.map(serializeMember));
  },

  async members_partial_update(req) {
    const target = await pathMember(req);
    validateUpdate(callerSeat(req), seat(target));
    const level = req.body?.level;
    if (level === undefined) return serializeMember(target);
    validateUpdate(callerSeat(req), seat(target), level);
    const membership = await setMemberLevel(req.server.db, target.membership.id, level);
    if (!membership) throw ApiError.notFound();
    await req.server.authCache.invalidate();
    return serializeMember({ membership, user: target.user });
  },

  async members_destroy(req, reply) {
    const target = await pathMember(req);
    validateUpdate(callerSeat(req), seat(target));
    // PostHog removes a member through User.leave, which no owner passes, whoever asks.
    if (target.membership.level === Level.OWNER) {
      throw ApiError.validation(null, 'Cannot leave the organization as its owner!');
    }
    await removeMember(req.server.db, req.tenant.organization_id, target.user.id);
    await req.server.authCache.invalidate();
    reply.code(204);
  },
} satisfies SomeHandlers;
