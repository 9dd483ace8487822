import type { FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import type { Handler, ProjectRequest, SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { isInsightNode, prepareInsight, runInsight, type InsightNode } from './kinds/index.js';
import { runQuery, type QueryNode } from './run.js';
import { presentQueryStatus, queryStatusPieces } from './status-serialize.js';
import { textStream } from './answer.js';
import type { Sent } from '../http/json-text.js';

type QueryRequest = components['schemas']['QueryRequest'];

/** PostHog's `refresh` values that answer before the query runs (there is no cache to miss here). */
const ASYNC_REFRESH = new Set(['async', 'force_async', 'async_except_on_cache_miss']);

function hogqlNode(q: { query?: string; values?: Record<string, unknown> | null }, attr: string): QueryNode {
  if (typeof q.query !== 'string') throw ApiError.required(`${attr}query`);
  if (!q.query.trim()) throw ApiError.validation(`${attr}query`, 'This field may not be blank.', 'blank');
  return { kind: 'HogQLQuery', query: q.query, values: q.values ?? null };
}

/** The request's query node, with the fields its kind needs. */
function queryNode(body: QueryRequest): QueryNode | InsightNode {
  const q = body.query;
  if (isInsightNode(q)) return q;
  if (q.kind === 'HogQLQuery') return hogqlNode(q, 'query__');
  // PostHog runs a node it has no runner for (an SQL chart) as its source: the answer is the source's.
  if (q.kind === 'DataVisualizationNode') {
    if (!q.source) throw ApiError.required('query__source');
    return hogqlNode(q.source, 'query__source__');
  }
  if (!Array.isArray(q.select)) throw ApiError.required('query__select');
  return { ...q, kind: 'EventsQuery', select: q.select };
}

/** PostHog's rule: `refresh` decides when given, else the older `async` flag. */
const isAsync = (body: QueryRequest) => (body.refresh ? ASYNC_REFRESH.has(body.refresh) : body.async === true);

async function query(req: FastifyRequest<{ Body: QueryRequest }> & ProjectRequest, reply: FastifyReply) {
  const node = queryNode(req.body);
  const { organization_id, project_id, timezone } = req.tenant;
  if (!isAsync(req.body)) {
    const { queries } = req.server;
    if (isInsightNode(node)) {
      return runInsight({ engine: queries, organizationId: organization_id }, project_id, await prepareInsight(node));
    }
    const answer = await runQuery(queries, organization_id, project_id, timezone, node);
    // Written in slices as the client reads it, never as one string built and sent at once.
    return reply.type('application/json; charset=utf-8').send(answer.stream());
  }
  if (req.body.client_query_id === '')
    throw ApiError.validation('client_query_id', 'This field may not be blank.', 'blank');
  const { client_query_id } = req.body;
  const row = await req.server.asyncQueries.start(organization_id, project_id, timezone, client_query_id, node);
  reply.code(202);
  return presentQueryStatus(row);
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
