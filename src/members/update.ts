import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { Level } from '../core/levels.js';
import type { Db } from '../db/client.js';
import { presentMembers } from './present.js';
import { removeMember, setMemberLevel, type MemberRow } from './queries.js';

/** A member as PostHog's rules see them: who they are and their level in the organization. */
export interface Seat {
  userId: number;
  level: number;
}

const seatOf = (m: MemberRow): Seat => ({ userId: m.user.id, level: m.membership.level });

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

/** A member's update (PATCH and PUT): without a level it changes nothing and answers the member. */
export async function changeMember(
  db: Db,
  organizationId: string,
  caller: Seat,
  target: MemberRow,
  level: number | undefined,
): Promise<components['schemas']['OrganizationMember']> {
  validateUpdate(caller, seatOf(target));
  if (level === undefined) return (await presentMembers(db, [target]))[0]!;
  validateUpdate(caller, seatOf(target), level);
  const membership = await setMemberLevel(db, organizationId, target.membership.id, level);
  if (!membership) throw ApiError.notFound();
  return (await presentMembers(db, [{ membership, user: target.user }]))[0]!;
}

/** Removes a member; PostHog removes one through User.leave, which no owner passes, whoever asks. */
export async function removeMemberAs(db: Db, organizationId: string, caller: Seat, target: MemberRow): Promise<void> {
  validateUpdate(caller, seatOf(target));
  if (target.membership.level === Level.OWNER) {
    throw ApiError.validation(null, 'Cannot leave the organization as its owner!');
  }
  await removeMember(db, organizationId, target.user.id);
}
