import type { SomeHandlers } from '../http/types.js';
import { loadPrincipal } from '../db/queries/auth.js';
import { getInviteWithOrganization, isExpired } from '../db/queries/invites.js';
import { acceptInvite, expiredInvite, invalidInvite } from '../db/queries/signup.js';
import { hashKeyValue } from '../tokens.js';
import { describeUser } from './users.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// Public operations (`security: []`): no key is checked; the invite's id is what grants access.
export const signupHandlers = {
  async signup_retrieve(req) {
    const { invite_id } = req.params;
    const found = UUID.test(invite_id) ? await getInviteWithOrganization(req.server.db, invite_id.toLowerCase()) : undefined;
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
    if (!UUID.test(invite_id)) throw invalidInvite();
    const { organization, key, value } = await acceptInvite(req.server.db, invite_id.toLowerCase(), {
      first_name: req.body?.first_name,
      last_name: req.body?.last_name,
    });
    // A cached principal of an existing user predates the new membership.
    await req.server.authCache.invalidate();
    const principal = await loadPrincipal(req.server.db, hashKeyValue(value));
    if (!principal) throw new Error('a key minted for an active user did not authenticate');
    reply.code(201);
    return {
      user: await describeUser(req.server.db, principal),
      organization,
      personal_api_key: {
        id: key.id,
        label: key.label,
        value,
        scopes: key.scopes,
        scoped_organizations: key.scoped_organizations,
      },
    };
  },
} satisfies SomeHandlers;
