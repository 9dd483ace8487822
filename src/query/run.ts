import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { runReadOnly, type RunTag } from '../db/queries/query.js';
import { compileQuery, parseQuery, QueryError, type CompiledQuery, type Select } from '../hogql/query/index.js';
import { databaseError, queryError } from './errors.js';
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

/** The server's query limiter (one per config), which every Query API statement waits in. */
export function queryLimiter(config: Config): Limiter {
  let limiter = limiters.get(config);
  if (!limiter) limiters.set(config, (limiter = new Limiter(config.queryConcurrency)));
  return limiter;
}

function compile(node: QueryNode, teamId: number, timings: Timings): CompiledQuery {
  try {
    const select: Select = timings.measure('parse', () =>
      node.kind === 'HogQLQuery' ? parseQuery(node.query) : eventsSelect(node),
    );
    const values = node.kind === 'HogQLQuery' ? (node.values ?? {}) : {};
    return timings.measure('compile', () =>
      compileQuery(select, { teamId, values, defaultLimit: DEFAULT_ROWS, maxLimit: MAX_ROWS }),
    );
  } catch (err) {
    if (err instanceof QueryError) throw queryError(err);
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
export function prepareQuery(teamId: number, node: QueryNode): PreparedQuery {
  const timings = new Timings();
  return { node, compiled: compile(node, teamId, timings), timings };
}

/**
 * Runs a prepared query and answers in PostHog's response shape for its kind, with the `timings` of
 * its steps: parse, compile, execute (in the database, after any wait for a slot) and serialise (the
 * rows into the answer). `tag` marks an asynchronous query's statement (see runReadOnly).
 */
export async function executeQuery(db: Db, config: Config, prepared: PreparedQuery, tag?: RunTag) {
  const { node, compiled, timings } = prepared;
  const rows = await queryLimiter(config).run(() =>
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
  return executeQuery(db, config, prepareQuery(teamId, node));
}

export type QueryAnswer = Awaited<ReturnType<typeof executeQuery>>;
