import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { ApiError } from '../core/errors.js';
import type { Database, Db } from '../db/client.js';
import { RunRefused } from './queries.js';
import {
  cancelQueryStatus,
  failQueryRuns,
  findQueryStatus,
  finishQueryStatus,
  pickUpQueryStatus,
  RUNS_STOPPED_CHANNEL,
  runApplicationName,
  startQueryStatus,
  type QueryStatusRow,
} from './status-queries.js';
import { type InsightNode, isInsightNode, prepareInsight, runInsight } from './kinds/index.js';
import { executeQuery, prepareQuery, testAccountFiltersFor, type QueryEngine, type QueryNode } from './run.js';

export const CANCELLED_MESSAGE = 'Query cancelled';
export const STOPPED_MESSAGE =
  'The server stopped before the query finished (it was restarting or shutting down). Run the query again.';
export const LOST_MESSAGE =
  'The server running the query stopped, or the query ran past its expiry, before it finished. Run the query again.';
const SERVER_ERROR_MESSAGE = 'The query failed because of a server error. Run it again.';

/**
 * How long a status is kept after its query ends, and how long a query may wait and run before its
 * status answers as failed: an hour, or more for a server whose statement timeout is longer.
 */
export const keepSeconds = (config: Config) => Math.max(3600, Math.ceil(config.queryTimeoutSeconds * 2) + 60);

/**
 * The asynchronous queries of one server process (PostHog's `refresh: "async"`): each is checked at
 * once, recorded as running in `query_statuses`, answered, and then run in this process through the
 * same organization's slots, timeout, caps and restricted transaction as a synchronous query. Its
 * status is readable and cancellable from any process on the database. `stop` fails this process's
 * unfinished ones.
 */
export class AsyncQueries {
  private readonly runs = new Map<
    string,
    { projectId: number; run: string; done: Promise<void>; stopped: AbortController }
  >();
  private stopping = false;

  private readonly db: Db;
  private readonly config: Config;

  constructor(
    private readonly engine: QueryEngine,
    /** Its LISTEN connection's name is recorded with each run (see startQueryStatus). */
    private readonly database: Pick<Database, 'listen' | 'listenerName'>,
    private readonly log: (msg: string, err: unknown) => void,
  ) {
    this.db = engine.db;
    this.config = engine.config;
  }

  /**
   * Checks and records the query (a bad one throws its 400, as does a full queue of the organization its
   * 429), then runs it in a slot of the organization after the caller answers. `onAnswer` also gets
   * a complete answer, with the time its computation started (the result cache stores it).
   */
  async start(
    organizationId: string,
    projectId: number,
    timezone: string,
    clientId: string | null | undefined,
    node: QueryNode | InsightNode,
    onAnswer?: (answer: string, startedAt: Date) => Promise<void>,
  ): Promise<QueryStatusRow> {
    if (this.stopping) throw ApiError.unavailable();
    const insight = isInsightNode(node) ? await prepareInsight(node) : undefined;
    const query = insight ? undefined : (node as QueryNode);
    const prepared = query
      ? await prepareQuery(projectId, query, timezone, await testAccountFiltersFor(this.db, projectId, query))
      : undefined;
    this.engine.limiter.check(organizationId);
    const id = clientId ?? randomUUID().replace(/-/g, '');
    const keep = keepSeconds(this.config);
    const row = await startQueryStatus(this.db, projectId, id, this.database.listenerName, keep);
    if (!row) {
      throw ApiError.validation(
        'client_query_id',
        'A query with this client_query_id is still running. Cancel it or use another id.',
      );
    }
    const { run } = row;
    const startedAt = new Date();
    const stopped = new AbortController();
    const done = new Promise<void>((resolve) => setImmediate(resolve))
      .then((): Promise<string> => {
        const tag = {
          applicationName: runApplicationName(run),
          onBackend: (pid: number) =>
            this.stopping ? Promise.resolve(false) : pickUpQueryStatus(this.db, projectId, run, pid),
          signal: stopped.signal,
        };
        return insight
          ? runInsight({ engine: this.engine, organizationId, tag }, projectId, insight).then((r) => JSON.stringify(r))
          : executeQuery(this.engine, organizationId, prepared!, tag).then((answer) => answer.text());
      })
      .then(
        async (answer) => {
          await onAnswer?.(answer, startedAt);
          await finishQueryStatus(this.db, projectId, run, { state: 'complete', answer }, keep);
        },
        async (err: unknown) => {
          if (err instanceof RunRefused) return; // cancelled or failed by a shutdown before it started
          if (!(err instanceof ApiError)) this.log('asynchronous query failed', err);
          const message = err instanceof ApiError ? err.body.detail : SERVER_ERROR_MESSAGE;
          await finishQueryStatus(this.db, projectId, run, { state: 'failed', message }, keep);
        },
      )
      .catch((err: unknown) => this.log('could not record the end of an asynchronous query', err))
      .finally(() => this.runs.delete(run));
    this.runs.set(run, { projectId, run, done, stopped });
    return row;
  }

  /**
   * Listens for runs stopped by any process (a cancel, a shutdown's failure): this process's statement of
   * such a run is cancelled until it stops.
   */
  async listen(): Promise<void> {
    await this.database.listen(RUNS_STOPPED_CHANNEL, (run) => this.runs.get(run)?.stopped.abort());
  }

  /** The project's status of `id`; a running one whose process is gone answers as failed. */
  async find(projectId: number, id: string): Promise<QueryStatusRow | undefined> {
    return findQueryStatus(this.db, projectId, id, LOST_MESSAGE, keepSeconds(this.config));
  }

  /** Cancels the project's query `id` wherever it runs; false when the project has no such query. */
  async cancel(projectId: number, id: string): Promise<boolean> {
    return Boolean(await cancelQueryStatus(this.db, projectId, id, CANCELLED_MESSAGE, keepSeconds(this.config)));
  }

  /**
   * Fails this process's unfinished queries with a message saying so and stops their statements, then
   * waits for their runners to settle: the process is stopping and will not finish them.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    const runs = [...this.runs.values()];
    if (!runs.length) return;
    await failQueryRuns(this.db, runs, STOPPED_MESSAGE, keepSeconds(this.config)).catch((err: unknown) =>
      this.log('could not fail the unfinished asynchronous queries', err),
    );
    for (const r of runs) r.stopped.abort();
    await Promise.all(runs.map((r) => r.done));
  }
}
