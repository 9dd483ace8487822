// Inviting people to an organization: PostHog's checks in its order, storing the invites and mailing
// them after the answer, and presenting invites with their creators.
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { Level } from '../core/levels.js';
import type { OrganizationTenant } from '../core/tenant.js';
import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { afterCommit, transaction } from '../db/after-commit.js';
import {
  INVITE_DAYS_VALIDITY,
  isMemberEmail,
  organizationProjectIds,
  replaceInvites,
  type InviteRow,
  type NewInvite,
} from './queries.js';
import { getOrganization } from '../organizations/queries.js';
import { getUsers, normalizeEmail, type UserRow } from '../users/queries.js';
import { inviteMail, mailConfigured, sendMail, signupLink } from '../mail.js';
import { serializeInvite } from './serialize.js';

type InviteRequest = components['schemas']['OrganizationInviteRequest'];

/** Where mailing reports what became of each invitation (the request's logger). */
export interface MailLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Invites with the users who created them (one look-up for all). */
export async function presentInvites(db: Db, rows: InviteRow[]) {
  const creators = await getUsers(
    db,
    rows.flatMap((r) => (r.created_by_id === null ? [] : [r.created_by_id])),
  );
  return rows.map((r) => serializeInvite(r, r.created_by_id === null ? undefined : creators.get(r.created_by_id)));
}

/**
 * Checks one invite as PostHog's serializer does, in its order (level, project access, then an
 * existing member), and turns it into a row. `at` prefixes field names inside a bulk request.
 */
async function prepare(
  db: Db,
  config: Config,
  tenant: OrganizationTenant,
  body: InviteRequest,
  projectIds: Set<number>,
  at: string,
): Promise<NewInvite> {
  const level = body.level ?? Level.MEMBER;
  if (level > tenant.level) {
    throw ApiError.permissionDenied('You cannot invite a user with a higher permission level than your own.');
  }
  const access = body.private_project_access === undefined ? [] : body.private_project_access;
  if (access?.some((item) => !projectIds.has(item.id))) {
    throw ApiError.validation(
      `${at}private_project_access`,
      'Team does not exist on this organization, or it is private and you do not have access to it.',
    );
  }
  const target_email = normalizeEmail(body.target_email);
  if (await isMemberEmail(db, tenant.organization_id, target_email)) {
    throw ApiError.validation(null, 'A user with this email address already belongs to the organization.');
  }
  return {
    target_email,
    first_name: body.first_name ?? '',
    level,
    message: body.message ?? null,
    private_project_access: access,
    emailing_attempt_made: mailConfigured(config) && body.send_email !== false,
    combine: body.combine_pending_invites === true,
  };
}

/**
 * PostHog's UserCanInvitePermission: below administrator, inviting needs the organization's
 * `members_can_invite`. (PostHog checks it on single invites only; bulk invites are the same act.)
 */
async function requireInviteRight(db: Db, tenant: OrganizationTenant): Promise<void> {
  if (tenant.level >= Level.ADMIN) return;
  const organization = await getOrganization(db, tenant.organization_id);
  if (!organization?.members_can_invite) throw ApiError.permissionDenied();
}

/**
 * Creates invites from `user` (one, or a bulk request's, whose errors name the item), replacing
 * pending ones to the same addresses, and mails them once they are stored, without waiting for the mail.
 */
export async function createInvites(
  db: Db,
  config: Config,
  tenant: OrganizationTenant,
  user: UserRow,
  bodies: InviteRequest[],
  { bulk, log }: { bulk: boolean; log: MailLog },
): Promise<InviteRow[]> {
  await requireInviteRight(db, tenant);
  const projectIds = await organizationProjectIds(db, tenant.organization_id);
  const invites: NewInvite[] = [];
  for (const [i, body] of bodies.entries()) {
    invites.push(await prepare(db, config, tenant, body, projectIds, bulk ? `${i}__` : ''));
  }
  return transaction(db, async (tx) => {
    const rows = await replaceInvites(tx, tenant.organization_id, user.id, tenant.level, invites);
    afterCommit(tx, () => mailInvites(db, config, user, rows, log));
    return rows;
  });
}

/**
 * Sends the invitations after the answer: the request never waits for the mail server, and a
 * failure is logged, never reported to the caller.
 */
function mailInvites(db: Db, config: Config, user: UserRow, rows: InviteRow[], log: MailLog): void {
  const toSend = rows.filter((r) => r.emailing_attempt_made);
  if (!toSend.length) return;
  const inviterName = [user.first_name, user.last_name].filter(Boolean).join(' ') || user.email;
  void (async () => {
    const organization = await getOrganization(db, toSend[0]!.organization_id);
    for (const invite of toSend) {
      const mail = inviteMail({
        to: invite.target_email,
        firstName: invite.first_name,
        organizationName: organization?.name ?? '',
        inviterName,
        message: invite.message,
        link: signupLink(config, invite.id),
        validDays: INVITE_DAYS_VALIDITY,
      });
      // The invite id is a credential (it accepts the invite): the log gets only enough to tell invites apart.
      const logged = `${invite.id.slice(0, 8)}…`;
      await sendMail(config, mail).then(
        () => log.info({ invite: logged }, 'invite e-mail sent'),
        (err: unknown) => log.error({ err, invite: logged }, 'invite e-mail could not be sent'),
      );
    }
  })().catch((err: unknown) => log.error({ err }, 'invite e-mails could not be sent'));
}
