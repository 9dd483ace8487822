import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { loadPrincipal, type Principal } from '../auth/queries.js';
import { getInviteWithOrganization, isExpired } from './queries.js';
import { getKey } from '../personal-api-keys/queries.js';
import { acceptInvite, expiredInvite, invalidInvite } from './accept.js';
import { describePrincipal } from '../account/user.js';
import { isUuid } from '../core/ids.js';

/** The caller's principal on an operation where a key is optional: set only when one was presented. */
function caller(req: FastifyRequest): Principal | undefined {
  return (req as { principal?: Principal }).principal;
}

/**
 * `signup_retrieve` is public: the invite's id is what grants access. `signup_create` is public for a
 * new user; an existing user accepts with a key of their own (checked in onRequest when presented).
 */
export const signupHandlers = {
  async signup_retrieve(req) {
    const { invite_id } = req.params;
    const found = isUuid(invite_id)
      ? await getInviteWithOrganization(req.server.db, invite_id.toLowerCase())
      : undefined;
    if (!found) throw invalidInvite();
    if (isExpired(found.invite)) throw expiredInvite();
    return {
      id: found.invite.id,
      target_email: found.invite.target_email,
      first_name: found.invite.first_name,
      organization_name: found.organization_name,
    };
  },

  async signup_create(req, reply) {
    const { invite_id } = req.params;
    if (!isUuid(invite_id)) throw invalidInvite();
    const acting = caller(req);
    // The key that accepts is read before the transaction: it is the caller's, not part of the write.
    const accepting = acting && (await getKey(req.server.db, acting.user.id, acting.key.id));
    const answer = await acceptInvite(
      req.server.db,
      invite_id.toLowerCase(),
      { first_name: req.body?.first_name, last_name: req.body?.last_name },
      acting && {
        user: acting.user,
        scopedOrganizations: acting.key.scoped_organizations?.length ? acting.key.scoped_organizations : undefined,
      },
      async (tx, { organization, minted }) => {
        const key = minted?.key ?? accepting;
        const principal = key && (await loadPrincipal(tx, key.secure_value));
        if (!key || !principal) throw new Error('the key of an accepted invite did not authenticate');
        return {
          user: await describePrincipal(tx, principal),
          organization,
          personal_api_key: {
            id: key.id,
            label: key.label,
            value: minted?.value ?? null,
            scopes: key.scopes,
            scoped_organizations: key.scoped_organizations,
          },
        };
      },
    );
    // A new user gets 201 with their first key; an existing user who accepted with their own key, 200.
    reply.code(acting ? 200 : 201);
    return answer;
  },
} satisfies SomeHandlers;
