import { ApiError } from '../core/errors.js';
import { isInsightNode, prepareInsight, type InsightNode } from '../query/kinds/index.js';
import { prepareQuery, type QueryNode } from '../query/run.js';

/** What a saved query computes: an insight kind, a HogQL query or an events query. */
export type RunnableNode = QueryNode | InsightNode;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** PostHog's wrapper nodes: they draw their `source`, which is what runs. */
const WRAPPERS: Record<string, (kind: string) => boolean> = {
  InsightVizNode: (kind) => isInsightNode({ kind }),
  DataVisualizationNode: (kind) => kind === 'HogQLQuery',
  DataTableNode: (kind) => kind === 'HogQLQuery' || kind === 'EventsQuery',
};

function hogql(q: Record<string, unknown>, attr: string): QueryNode {
  if (typeof q.query !== 'string') throw ApiError.required(`${attr}__query`);
  if (!q.query.trim()) throw ApiError.validation(`${attr}__query`, 'This field may not be blank.', 'blank');
  const values = q.values ?? null;
  if (values !== null && !isObject(values)) throw ApiError.validation(`${attr}__values`, 'Values must be a dictionary');
  const node: QueryNode = { kind: 'HogQLQuery', query: q.query, values };
  if (q.filters !== undefined && q.filters !== null) {
    if (!isObject(q.filters)) throw ApiError.validation(`${attr}__filters`, 'Filters must be a dictionary');
    node.filters = q.filters;
  }
  if (q.variables !== undefined && q.variables !== null) {
    if (!isObject(q.variables)) throw ApiError.validation(`${attr}__variables`, 'Variables must be a dictionary');
    node.variables = q.variables;
  }
  return node;
}

function leaf(q: Record<string, unknown>, attr: string): RunnableNode {
  const kind = q.kind;
  if (typeof kind !== 'string') throw ApiError.required(`${attr}__kind`);
  if (kind === 'HogQLQuery') return hogql(q, attr);
  if (kind === 'EventsQuery') {
    if (!Array.isArray(q.select)) throw ApiError.required(`${attr}__select`);
    return { ...q, kind: 'EventsQuery', select: q.select } as QueryNode;
  }
  if (isInsightNode({ kind })) return q as InsightNode;
  throw ApiError.invalidChoice(`${attr}__kind`, kind);
}

/** The node a saved query runs, from the stored `query`; a query of no known shape is a 400 on its field. */
export function runnableNode(query: unknown, attr = 'query'): { node: RunnableNode; attr: string } {
  if (!isObject(query)) throw ApiError.validation(attr, 'The query must be an object with a kind.');
  const kind = query.kind;
  if (typeof kind === 'string' && kind in WRAPPERS) {
    const source = query.source;
    if (!isObject(source)) throw ApiError.required(`${attr}__source`);
    const node = leaf(source, `${attr}__source`);
    if (!WRAPPERS[kind]!(node.kind)) throw ApiError.invalidChoice(`${attr}__source__kind`, node.kind);
    return { node, attr: `${attr}__source` };
  }
  return { node: leaf(query, attr), attr };
}

/**
 * Checks and compiles a saved query for the project, so that one which cannot run is refused when it is
 * saved: the 400 names the field in the insight's body (`query__source__series`, ...).
 */
export async function checkQuery(projectId: number, query: unknown): Promise<RunnableNode> {
  const { node, attr } = runnableNode(query);
  try {
    if (isInsightNode(node)) await prepareInsight(node);
    // Whether it compiles does not depend on the zone it would run in.
    else await prepareQuery(projectId, node, 'UTC');
  } catch (err) {
    if (!(err instanceof ApiError) || err.statusCode !== 400) throw err;
    // The kinds name fields as in a Query API body (`query__series`); here the query may be a wrapper's source.
    const at = err.attr === null ? attr : err.attr.startsWith('query') ? `${attr}${err.attr.slice(5)}` : err.attr;
    throw new ApiError(err.statusCode, err.type, err.code, err.detail, at);
  }
  return node;
}

/** PostHog's interval of a query (its cache freshness depends on it); none for HogQL and events queries. */
export function intervalOf(node: RunnableNode): string | null {
  if (!isInsightNode(node)) return null;
  return typeof node.interval === 'string' ? node.interval : 'day';
}
