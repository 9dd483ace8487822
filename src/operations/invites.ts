import type { FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import { paginated } from '../http/pagination.js';
import { pageOf } from '../core/paging.js';
import {
  deleteInvite,
  INVITE_DAYS_VALIDITY,
  isMemberEmail,
  listInvites,
  organizationProjectIds,
  replaceInvites,
  type InviteRow,
  type NewInvite,
} from '../db/queries/invites.js';
import { getOrganization } from '../db/queries/organizations.js';
import { getUsers, normalizeEmail } from '../db/queries/users.js';
import { inviteMail, mailConfigured, sendMail, signupLink } from '../mail.js';
import { serializeInvite } from '../serializers/invites.js';
import { isUuid } from '../core/ids.js';

type InviteRequest = components['schemas']['OrganizationInviteRequest'];

/**
 * Checks one invite as PostHog's serializer does, in its order (level, project access, then an
 * existing member), and turns it into a row. `at` prefixes field names inside a bulk request.
 */
async function prepare(req: FastifyRequest, body: InviteRequest, projectIds: Set<number>, at = ''): Promise<NewInvite> {
  const level = body.level ?? Level.MEMBER;
  if (level > req.tenant.level) {
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
  if (await isMemberEmail(req.server.db, req.tenant.organization_id, target_email)) {
    throw ApiError.validation(null, 'A user with this email address already belongs to the organization.');
  }
  return {
    target_email,
    first_name: body.first_name ?? '',
    level,
    message: body.message ?? null,
    private_project_access: access,
    emailing_attempt_made: mailConfigured(req.server.config) && body.send_email !== false,
    combine: body.combine_pending_invites === true,
  };
}

/**
 * PostHog's UserCanInvitePermission: below administrator, inviting needs the organization's
 * `members_can_invite`. (PostHog checks it on single invites only; bulk invites are the same act.)
 */
async function requireInviteRight(req: FastifyRequest): Promise<void> {
  if (req.tenant.level >= Level.ADMIN) return;
  const organization = await getOrganization(req.server.db, req.tenant.organization_id);
  if (!organization?.members_can_invite) throw ApiError.permissionDenied();
}

async function present(req: FastifyRequest, rows: InviteRow[]) {
  const creators = await getUsers(
    req.server.db,
    rows.flatMap((r) => (r.created_by_id === null ? [] : [r.created_by_id])),
  );
  return rows.map((r) => serializeInvite(r, r.created_by_id === null ? undefined : creators.get(r.created_by_id)));
}

/**
 * Sends the invitations after the answer: the request never waits for the mail server, and a
 * failure is logged, never reported to the caller.
 */
function mailInvites(req: FastifyRequest, rows: InviteRow[]): void {
  const toSend = rows.filter((r) => r.emailing_attempt_made);
  if (!toSend.length) return;
  const { config, db } = req.server;
  const { user } = req.principal;
  const inviterName = [user.first_name, user.last_name].filter(Boolean).join(' ') || user.email;
  const log = req.log;
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

export const inviteHandlers = {
  async invites_list(req) {
    const page = pageOf(req.query);
    const { count, rows } = await listInvites(req.server.db, req.tenant.organization_id, page);
    return paginated(req, page, count, await present(req, rows));
  },

  async invites_create(req, reply) {
    await requireInviteRight(req);
    const projectIds = await organizationProjectIds(req.server.db, req.tenant.organization_id);
    const invite = await prepare(req, req.body, projectIds);
    const rows = await replaceInvites(
      req.server.db,
      req.tenant.organization_id,
      req.principal.user.id,
      req.tenant.level,
      [invite],
    );
    mailInvites(req, rows);
    reply.code(201);
    return (await present(req, rows))[0]!;
  },

  async invites_bulk_create(req, reply) {
    await requireInviteRight(req);
    const projectIds = await organizationProjectIds(req.server.db, req.tenant.organization_id);
    const invites: NewInvite[] = [];
    for (const [i, body] of req.body.entries()) invites.push(await prepare(req, body, projectIds, `${i}__`));
    const rows = await replaceInvites(
      req.server.db,
      req.tenant.organization_id,
      req.principal.user.id,
      req.tenant.level,
      invites,
    );
    mailInvites(req, rows);
    reply.code(201);
    return present(req, rows);
  },

  async invites_destroy(req, reply) {
    requireLevel(req.tenant, Level.ADMIN);
    if (!isUuid(req.params.id) || !(await deleteInvite(req.server.db, req.tenant.organization_id, req.params.id))) {
      throw ApiError.notFound();
    }
    reply.code(204);
  },
} satisfies SomeHandlers;
