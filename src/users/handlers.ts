import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { paginated } from '../http/pagination.js';
import { listUsers, updateUser } from './queries.js';
import { changeUser, describeUser, loadUser } from '../account/user.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import { pageOf } from '../core/paging.js';

type UserBody = components['schemas']['PatchedUserRequest'];

const pathUser = (req: FastifyRequest<{ Params: { uuid: string } }>) =>
  loadUser(req.server.db, req.principal.user, req.params.uuid);

async function update(req: FastifyRequest<{ Params: { uuid: string }; Body: UserBody | undefined }>) {
  const target = await pathUser(req);
  const user = await changeUser(req.server.db, req.principal.user, target, req.body ?? {});
  return describeUser(req.server.db, user);
}

export const userHandlers = {
  async users_list(req) {
    const page = pageOf(req.query);
    const caller = req.principal.user;
    const { email, is_staff } = req.query;
    const { count, rows } = await listUsers(
      req.server.db,
      {
        ...(caller.is_staff ? {} : { onlyId: caller.id }),
        ...(email !== undefined ? { email } : {}),
        ...(is_staff !== undefined ? { is_staff } : {}),
      },
      page,
    );
    const results = await Promise.all(rows.map((u) => describeUser(req.server.db, u)));
    return paginated(req, page, count, results);
  },

  async users_retrieve(req) {
    return describeUser(req.server.db, await pathUser(req));
  },

  async users_partial_update(req) {
    return update(req);
  },

  async users_update(req) {
    return update(req);
  },

  async users_hedgehog_config_retrieve(req) {
    return (await pathUser(req)).hedgehog_config ?? {};
  },

  async users_hedgehog_config_partial_update(req) {
    const target = await pathUser(req);
    const user = await updateUser(req.server.db, target.id, { hedgehog_config: req.body });
    if (!user) throw ApiError.notFound();
    return user.hedgehog_config ?? {};
  },
} satisfies SomeHandlers;
