import type { SQL } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { projectTestAccountFilters, streamReadOnly, type QueryLimits, type RunTag } from './queries.js';
import { ApiError } from '../core/errors.js';
import { CACHE_ENTRIES, compileQuery, parseQuery, QueryError, type CompiledQuery, type Query } from '../hogql/index.js';
import { AnswerRows, JsonAnswer } from './answer.js';
import { databaseError } from './errors.js';
import { eventsSelect, type EventsQuery } from './events-query.js';
import { applyHogQLFilters, type HogQLFilters, variableValues } from './hogql-filters.js';
import { FairLimiter } from './limiter.js';
import { Timings } from './timings.js';
import { Lru } from '../core/lru.js';

export interface HogQLQuery {
  kind: 'HogQLQuery';
  query: string;
  values?: Record<string, unknown> | null;
  /** PostHog's HogQLFilters, for `{filters}` (a dashboard's date range and properties land here). */
  filters?: HogQLFilters | null;
  /** PostHog's HogQLVariables by id, for `{variables.<code_name>}`. */
  variables?: Record<string, unknown> | null;
}

export type QueryNode = HogQLQuery | EventsQuery;

/** PostHog's row cap for a HogQL query's answer (MAX_SELECT_RETURNED_ROWS), and the page a query without LIMIT gets. */
export const MAX_ROWS = 50_000;
export const DEFAULT_ROWS = 100;

/**
 * What runs the queries of one server process: its database, its configuration, the slots shared
 * fairly between organizations, and the limits every query transaction gets (see query-role.ts).
 */
export interface QueryEngine {
  db: Db;
  config: Config;
  limiter: FairLimiter;
  limits: QueryLimits | undefined;
  /** Where synchronous statements run: the read replica (with its limits) when there is one, else `db`. */
  read: { db: Db; limits: QueryLimits | undefined };
}

export function queryEngine(
  db: Db,
  config: Config,
  limits?: QueryLimits,
  read?: { db: Db; limits: QueryLimits },
): QueryEngine {
  return {
    db,
    read: read ?? { db, limits },
    config,
    limiter: new FairLimiter(
      config.queryConcurrency,
      config.queryConcurrencyPerOrganization,
      config.queryQueuePerOrganization,
    ),
    limits,
  };
}

/**
 * Compiled HogQL texts by project, timezone and values: the compiler is a pure function of them (its dates are
 * SQL's now(), read when the statement runs), so a query asked again costs neither a parse nor a compile.
 */
const compiledQueries = new Lru<string, CompiledQuery>(CACHE_ENTRIES);
/** The longest key (the query's text and values) whose compiled query is kept. */
const MAX_KEPT_KEY = 4_096;

async function compile(
  node: QueryNode,
  teamId: number,
  timezone: string,
  timings: Timings,
  testAccountFilters: unknown[],
): Promise<CompiledQuery> {
  try {
    const parsed: Query = await timings.measure('parse', () =>
      node.kind === 'HogQLQuery' ? parseQuery(node.query) : eventsSelect(node, testAccountFilters),
    );
    const hogql = node.kind === 'HogQLQuery';
    const select = hogql ? applyHogQLFilters(parsed, node.filters, timezone, testAccountFilters) : parsed;
    const values = hogql ? { ...variableValues(node.variables), ...(node.values ?? {}) } : {};
    // `filters` carry date ranges relative to now, so only a query without them compiles the same every time.
    const text = hogql && !node.filters ? JSON.stringify([teamId, timezone, values, node.query]) : undefined;
    // Large values are compiled each time, so the kept queries stay within tens of megabytes whatever is sent.
    const key = text !== undefined && text.length <= MAX_KEPT_KEY ? text : undefined;
    return timings.measure('compile', () => {
      const hit = key === undefined ? undefined : compiledQueries.get(key);
      if (hit) return hit;
      const compiled = compileQuery(select, {
        teamId,
        values,
        timezone,
        defaultLimit: DEFAULT_ROWS,
        maxLimit: MAX_ROWS,
      });
      if (key !== undefined) compiledQueries.set(key, compiled);
      return compiled;
    });
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

/**
 * Parses and compiles a query for a project, its dates in the project's timezone (where toStartOfDay and
 * the like cut, as PostHog's team timezone does): a bad query throws its 400 here, before anything runs.
 */
export async function prepareQuery(
  teamId: number,
  node: QueryNode,
  timezone: string,
  testAccountFilters: unknown[] = [],
): Promise<PreparedQuery> {
  const timings = new Timings();
  return { node, compiled: await compile(node, teamId, timezone, timings, testAccountFilters), timings };
}

/**
 * The project's test account filters when the query asks for them (an EventsQuery's `filterTestAccounts`,
 * a HogQL query's `filters.filterTestAccounts`), read when the query runs, as PostHog reads the team's;
 * otherwise none.
 */
export async function testAccountFiltersFor(db: Db, teamId: number, node: QueryNode): Promise<unknown[]> {
  const wanted =
    node.kind === 'HogQLQuery' ? node.filters?.filterTestAccounts === true : node.filterTestAccounts === true;
  return wanted ? projectTestAccountFilters(db, teamId) : [];
}

/**
 * Runs a prepared query in a slot of its organization and answers in PostHog's response shape for its
 * kind, with the `timings` of its steps: parse, compile, execute (in the database, after any wait for
 * a slot, rows streamed into the answer as they arrive) and serialise (the answer's other fields). An
 * answer over QUERY_MAX_BYTES is a 400 as soon as its rows pass the cap. `tag` marks an asynchronous
 * query's statement (see streamReadOnly).
 */
export async function executeQuery(
  engine: QueryEngine,
  organizationId: string,
  prepared: PreparedQuery,
  tag?: RunTag,
): Promise<JsonAnswer> {
  const { node, compiled, timings } = prepared;
  const rows = new AnswerRows(compiled.limit, engine.config.queryMaxBytes);
  await runStatement(engine, organizationId, compiled.sql, rows, { tag, timezone: compiled.timezone, timings });
  const rest = timings.measure('serialise', () => {
    const common = {
      columns: compiled.columns,
      hogql: compiled.hogql,
      limit: compiled.limit,
      offset: compiled.offset,
      hasMore: rows.hasMore,
    };
    if (node.kind === 'EventsQuery') return { ...common, columns: node.select, types: compiled.types };
    return { ...common, types: compiled.columns.map((c, i) => [c, compiled.types[i]!]), query: node.query };
  });
  return new JsonAnswer('results', rows.rows, { ...rest, timings: timings.list() });
}

/**
 * The database a statement runs on, and its limits. An asynchronous run (tagged) stays on the primary:
 * its status records the backend's pid, which other processes check in the primary's pg_stat_activity
 * to see that it still runs and to cancel it. Every other statement reads from the replica, if any.
 */
export function statementTarget(engine: QueryEngine, tag: RunTag | undefined): { db: Db; limits?: QueryLimits } {
  return tag ? { db: engine.db, limits: engine.limits } : engine.read;
}

/**
 * Runs a statement whose rows are one JSON column (`r`) as every Query API statement runs: in a slot of the
 * organization, on statementTarget's database, read-only under its limits, the timeout and QUERY_MAX_BYTES, in
 * `timezone` when given; each row goes to `rows` as it arrives. With `timings`, the run in its slot is `execute`.
 */
export async function runStatement(
  engine: QueryEngine,
  organizationId: string,
  statement: SQL,
  rows: AnswerRows,
  opts: { tag?: RunTag; timezone?: string; timings?: Timings } = {},
): Promise<void> {
  const { config } = engine;
  const target = statementTarget(engine, opts.tag);
  const run = () =>
    streamReadOnly(target.db, statement, {
      timezone: opts.timezone,
      timeoutMs: config.queryTimeoutSeconds * 1000,
      maxBytes: config.queryMaxBytes,
      tag: opts.tag,
      limits: target.limits,
      onRow: (json) => rows.add(json),
    }).catch((err: unknown) => {
      throw databaseError(err, config) ?? err;
    });
  await engine.limiter.run(organizationId, () => (opts.timings ? opts.timings.measure('execute', run) : run()));
}

/**
 * Runs a query for one project of an organization at once (prepareQuery, then executeQuery), in the project's
 * timezone (the request's project carries it: see ProjectTenant).
 */
export async function runQuery(
  engine: QueryEngine,
  organizationId: string,
  teamId: number,
  timezone: string,
  node: QueryNode,
) {
  const testAccounts = await testAccountFiltersFor(engine.db, teamId, node);
  return executeQuery(engine, organizationId, await prepareQuery(teamId, node, timezone, testAccounts));
}
