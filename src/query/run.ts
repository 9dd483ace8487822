import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { runReadOnly, type RunTag } from '../db/queries/query.js';
import { ApiError } from '../core/errors.js';
import { compileQuery, parseQuery, QueryError, type CompiledQuery, type Query } from '../hogql/query/index.js';
import { databaseError } from './errors.js';
import { eventsSelect, type EventsQuery } from './events-query.js';
import { Limiter } from './limiter.js';
import { Timings } from './timings.js';

export interface HogQLQuery {
  kind: 'HogQLQuery';
  query: string;
  values?: Record<string, unknown> | null;
}

export type QueryNode = HogQLQuery | EventsQuery;

/** PostHog's row cap for a query's answer, and the page a query without LIMIT gets. */
export const MAX_ROWS = 10_000;
export const DEFAULT_ROWS = 100;

/** One limiter per server (its config), shared by every request of that server. */
const limiters = new WeakMap<Config, Limiter>();

async function compile(node: QueryNode, teamId: number, timings: Timings): Promise<CompiledQuery> {
  try {
    const select: Query = await timings.measure('parse', () =>
      node.kind === 'HogQLQuery' ? parseQuery(node.query) : eventsSelect(node),
    );
    const values = node.kind === 'HogQLQuery' ? (node.values ?? {}) : {};
    return timings.measure('compile', () =>
      compileQuery(select, { teamId, values, defaultLimit: DEFAULT_ROWS, maxLimit: MAX_ROWS }),
    );
  } catch (err) {
    // PostHog's code: hogql_syntax_error or hogql_query_error.
    if (err instanceof QueryError) throw ApiError.validation(null, err.message, err.code);
    throw err;
  }
}

/** A query checked and compiled for one project, ready to run (now or after an asynchronous answer). */
export interface PreparedQuery {
  node: QueryNode;
  compiled: CompiledQuery;
  timings: Timings;
}

/** Parses and compiles a query for a project: a bad query throws its 400 here, before anything runs. */
export async function prepareQuery(teamId: number, node: QueryNode): Promise<PreparedQuery> {
  const timings = new Timings();
  return { node, compiled: await compile(node, teamId, timings), timings };
}

/**
 * Runs a prepared query and answers in PostHog's response shape for its kind, with the `timings` of
 * its steps: parse, compile, execute (in the database, after any wait for a slot) and serialise (the
 * rows into the answer). `tag` marks an asynchronous query's statement (see runReadOnly).
 */
export async function executeQuery(db: Db, config: Config, prepared: PreparedQuery, tag?: RunTag) {
  const { node, compiled, timings } = prepared;
  let limiter = limiters.get(config);
  if (!limiter) limiters.set(config, (limiter = new Limiter(config.queryConcurrency)));
  const rows = await limiter.run(() =>
    timings.measure('execute', () =>
      runReadOnly(db, compiled.sql, config.queryTimeoutSeconds * 1000, tag).catch((err: unknown) => {
        throw databaseError(err, config.queryTimeoutSeconds) ?? err;
      }),
    ),
  );
  const answer = timings.measure('serialise', () => {
    const hasMore = rows.length > compiled.limit;
    const results = hasMore ? rows.slice(0, compiled.limit) : rows;
    const common = {
      results,
      columns: compiled.columns,
      hogql: compiled.hogql,
      limit: compiled.limit,
      offset: compiled.offset,
      hasMore,
    };
    if (node.kind === 'EventsQuery') return { ...common, columns: node.select, types: compiled.types };
    return { ...common, types: compiled.columns.map((c, i) => [c, compiled.types[i]!]), query: node.query };
  });
  return { ...answer, timings: timings.list() };
}

/** Runs a query for one project at once (prepareQuery, then executeQuery). */
export async function runQuery(db: Db, config: Config, teamId: number, node: QueryNode) {
  return executeQuery(db, config, await prepareQuery(teamId, node));
}

export type QueryAnswer = Awaited<ReturnType<typeof executeQuery>>;
