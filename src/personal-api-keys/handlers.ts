import type { FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { getKey, listKeys } from './queries.js';
import { changeOwnKey, createOwnKey, deleteOwnKey, rollOwnKey } from './keys.js';
import { serializeKey } from './serialize.js';

/** `@current` names the key making the request. */
function keyId(req: FastifyRequest<{ Params: { id: string } }>): string {
  return req.params.id === '@current' ? req.principal.key.id : req.params.id;
}

export const personalApiKeyHandlers = {
  async personal_api_keys_list(req) {
    return (await listKeys(req.server.db, req.principal.user.id)).map((k) => serializeKey(k));
  },

  async personal_api_keys_create(req, reply) {
    const { row, value } = await createOwnKey(req.server.db, req.principal, req.body);
    reply.code(201);
    return serializeKey(row, value);
  },

  async personal_api_keys_retrieve(req) {
    const key = await getKey(req.server.db, req.principal.user.id, keyId(req));
    if (!key) throw ApiError.notFound();
    return serializeKey(key);
  },

  async personal_api_keys_partial_update(req) {
    const key = await changeOwnKey(req.server.db, req.principal, keyId(req), req.body);
    if (!key) throw ApiError.notFound();
    return serializeKey(key);
  },

  async personal_api_keys_destroy(req, reply) {
    if (!(await deleteOwnKey(req.server.db, req.principal, keyId(req)))) throw ApiError.notFound();
    reply.code(204);
  },

  async personal_api_keys_roll_create(req) {
    const rolled = await rollOwnKey(req.server.db, req.principal, keyId(req));
    if (!rolled) throw ApiError.notFound();
    return serializeKey(rolled.row, rolled.value);
  },
} satisfies SomeHandlers;
