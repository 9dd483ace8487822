import type { FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import type { ProjectRequest, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { runQuery, type QueryNode } from '../query/run.js';

type QueryRequest = components['schemas']['QueryRequest'];

/** The request's query node, with the fields its kind needs. */
function queryNode(body: QueryRequest): QueryNode {
  const q = body.query;
  if (q.kind === 'HogQLQuery') {
    if (typeof q.query !== 'string') throw ApiError.required('query__query');
    if (!q.query.trim()) throw ApiError.validation('query__query', 'This field may not be blank.', 'blank');
    return { kind: 'HogQLQuery', query: q.query, values: q.values ?? null };
  }
  if (!Array.isArray(q.select)) throw ApiError.required('query__select');
  return { ...q, kind: 'EventsQuery', select: q.select };
}

async function query(req: FastifyRequest<{ Body: QueryRequest }> & ProjectRequest) {
  return runQuery(req.server.db, req.server.config, req.tenant.project_id, queryNode(req.body));
}

export const queryHandlers = {
  query_create: query,
} satisfies SomeHandlers;
