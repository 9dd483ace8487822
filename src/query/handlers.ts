import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import type { Handler, ProjectRequest, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { cachedOutcome, refreshMode, type RefreshMode } from '../insights/cache.js';
import { withDashboardFilters } from '../insights/dashboard-filters.js';
import { cacheContext } from '../insights/handlers.js';
import { runnableNode, type RunnableNode } from '../insights/query-node.js';
import { presentQueryStatus, queryStatusPieces } from './status-serialize.js';
import { textStream } from './answer.js';
import type { Sent } from '../http/json-text.js';

type QueryRequest = components['schemas']['QueryRequest'];

/**
 * The request's query node, with the fields its kind needs: a wrapper (DataVisualizationNode,
 * InsightVizNode, DataTableNode) runs its source, as PostHog's process_query_model does.
 */
const queryNode = (body: QueryRequest): RunnableNode => runnableNode(body.query, 'query').node;

/**
 * PostHog's execution mode for the Query API: the older `async: true` wins (as `async`); otherwise
 * `refresh`, where `force_cache` (also what an absent or unknown value means) becomes `blocking`, since
 * this endpoint always computes a missing or stale answer.
 */
function executionMode(body: QueryRequest): RefreshMode {
  if (body.async === true) return 'async';
  const mode = refreshMode(body.refresh ?? undefined);
  return mode === 'force_cache' ? 'blocking' : mode;
}

async function query(req: FastifyRequest<{ Body: QueryRequest }> & ProjectRequest, reply: FastifyReply) {
  const { filters_override, variables_override } = req.body;
  const asked = queryNode(req.body);
  // PostHog's _process_query_request: the overrides apply as a dashboard's filters and variables do.
  const node =
    filters_override || variables_override
      ? (withDashboardFilters(
          asked as unknown as Record<string, unknown>,
          filters_override ?? {},
          variables_override ?? {},
        ) as unknown as RunnableNode)
      : asked;
  if (req.body.client_query_id === '')
    throw ApiError.validation('client_query_id', 'This field may not be blank.', 'blank');
  const mode = executionMode(req.body);
  const outcome = await cachedOutcome(cacheContext(req), node, mode, req.body.client_query_id);
  const { fields, text, computed } = outcome;
  if (text === null && computed === null) {
    // Started in the background with nothing cached: PostHog's QueryStatusResponse, or its CacheMissResponse.
    reply.code(202);
    const status = { query_status: fields.query_status! };
    return mode === 'force_async' ? status : { cache_key: fields.cache_key, ...status };
  }
  // A stale answer served while it is computed again answers 202, as PostHog's does.
  if (fields.query_status && !fields.query_status.complete) reply.code(202);
  reply.type('application/json; charset=utf-8');
  // Written in slices as the client reads it, never as one string built and sent at once.
  if (computed) return reply.send(computed.with({ ...fields }).stream());
  const tail = JSON.stringify(fields);
  return reply.send(textStream([text!.slice(0, text!.lastIndexOf('}')), ',', tail.slice(1)]));
}

const retrieve: Handler<'query_retrieve'> = async (req, reply) => {
  const row = await req.server.asyncQueries.find(req.tenant.project_id, req.params.id);
  if (!row) throw ApiError.notFound();
  const body = presentQueryStatus(row);
  // PostHog's codes: 202 while it runs, 200 complete, 400 failed with a message.
  reply.code(!body.query_status.complete ? 202 : body.query_status.error ? 400 : 200);
  if (row.answer === null) return body;
  // The stored answer (up to QUERY_MAX_BYTES) is sent as the text it is, in slices.
  return reply.type('application/json; charset=utf-8').send(textStream(queryStatusPieces(row))) as Sent<typeof body>;
};

const destroy: Handler<'query_destroy'> = async (req, reply) => {
  if (!(await req.server.asyncQueries.cancel(req.tenant.project_id, req.params.id))) throw ApiError.notFound();
  reply.code(204);
};

export const queryHandlers = {
  query_create: query,
  query_retrieve: retrieve,
  query_destroy: destroy,
} satisfies SomeHandlers;
