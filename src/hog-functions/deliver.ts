import { randomUUID } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { inSpan } from '../core/tracing.js';
import type { Db } from '../db/client.js';
import { hog_function_replays, projects } from '../db/schema/index.js';
import type { NetworkPolicy } from '../net/index.js';
import type { SecretBox } from '../secrets/index.js';
import { resolveInputs, runHog, type HogFetch, type LogLine, type RunResult } from './execute.js';
import { deliveryFetch } from './fetch.js';
import { invocationGlobals, type PersonInput, type ProjectInput } from './globals.js';
import { mappedInputs } from './mappings.js';
import { liveFunction, personsOf, type HogFunctionRow } from './queries.js';
import {
  DELIVERY_ATTEMPTS,
  DELIVERY_QUEUE,
  deliveriesOf,
  deliveryQueue,
  enqueueDeliveries,
  type Delivery,
  type DeliveryJob,
} from './queue.js';
import { addMetric, expireTelemetry, writeLogBatch } from './telemetry.js';

export interface DeliveryOptions {
  box: SecretBox;
  policy: NetworkPolicy;
  siteUrl: string;
  retryDelaySeconds: number;
  /** Deliveries of one function running at once, across every worker process. */
  perFunctionConcurrency: number;
  log?: (msg: string, err?: unknown) => void;
}

/**
 * Requests one job sends at once (at most REQUESTS_PER_JOB); the queue runs as many jobs of one function at
 * once as keep its deliveries in flight within perFunctionConcurrency.
 */
export const REQUESTS_PER_JOB = 8;
const lanesPerJob = (options: DeliveryOptions) =>
  Math.max(1, Math.min(REQUESTS_PER_JOB, options.perFunctionConcurrency));
/**
 * A job starts no delivery after this long: what is left goes back to the queue as it is, so a slow
 * endpoint's job ends well within the queue's expiry (120 s; a request takes 10 s at most).
 */
const JOB_DEADLINE_MS = 60_000;

type Fate = 'succeeded' | 'retry' | 'dead' | 'dropped';

/** The pause before a delivery's next attempt, as pg-boss's back-off: the delay doubled each attempt plus some. */
export function retryDelayMs(retryDelaySeconds: number, failedAttempt: number): number {
  const base = Math.max(retryDelaySeconds, 1) * 1000 * 2 ** (failedAttempt - 1);
  return Math.round(base * (1 + Math.random()));
}

interface JobContext {
  fn: HogFunctionRow & { bytecode: unknown[] };
  project: ProjectInput;
  persons: Map<string, PersonInput>;
  fetch: HogFetch;
  inputsOf: (mapping: number | undefined) => ReturnType<typeof mappedInputs>;
  lines: { instance: string; lines: LogLine[] }[];
}

/** One delivery: the function run on the event with its (mapping's) inputs; its log lines kept for the job's write. */
async function deliverOne(ctx: JobContext, options: DeliveryOptions, d: Delivery & { invocation: string }) {
  const attempt = d.attempt ?? 1;
  const { event } = d;
  const person = ctx.persons.get(event.distinct_id) ?? null;
  const globals = invocationGlobals(options.siteUrl, ctx.project, event, person, ctx.fn);
  let run: RunResult;
  try {
    const { inputs, secrets } = ctx.inputsOf(d.mapping);
    globals.inputs = resolveInputs(inputs, globals);
    run = await runHog(ctx.fn.bytecode, globals, { fetch: ctx.fetch, secrets });
  } catch (err) {
    run = { result: null, error: (err as Error).message, logs: [], retryable: false };
  }
  const last = attempt >= DELIVERY_ATTEMPTS;
  const lines: LogLine[] = [
    {
      level: 'DEBUG',
      message: `Executing function for event ${event.uuid} (attempt ${attempt}).`,
      timestamp: new Date(),
    },
    ...run.logs,
  ];
  let fate: Fate = 'succeeded';
  if (run.error && run.retryable && !last) {
    lines.push({
      level: 'WARN',
      message: `Attempt ${attempt} failed; it will be retried: ${run.error}`,
      timestamp: new Date(),
    });
    fate = 'retry';
  } else if (run.error) {
    lines.push({
      level: 'ERROR',
      message: `Delivery failed after ${attempt} attempt${attempt > 1 ? 's' : ''} (dead letter): ${run.error}`,
      timestamp: new Date(),
    });
    fate = 'dead';
  }
  ctx.lines.push({ instance: d.invocation, lines });
  return fate;
}

/**
 * Runs one job's deliveries: the function as it is now (disabled or deleted since: all dropped), read
 * once with the project and the events' persons, each event's inputs resolved and `fetch` through the
 * network policy, REQUESTS_PER_JOB at a time (fewer when the function's concurrency is lower). Log lines,
 * metrics and a replay's progress are written once for the job; retryable failures are queued again as
 * one job after a growing pause; the last failed attempt is the dead letter: logged and counted `failed`.
 */
export async function deliver(
  db: Db,
  boss: PgBoss,
  options: DeliveryOptions,
  job: JobWithMetadata<DeliveryJob>,
): Promise<'completed' | 'deadletter'> {
  const { function_id, project_id, replay_id } = job.data;
  const deliveries = deliveriesOf(job.data).map((d) => ({ ...d, invocation: d.invocation ?? randomUUID() }));
  const fn = await liveFunction(db, function_id);
  if (!fn?.bytecode || fn.project_id !== project_id || !deliveries.length) return 'completed';
  const distinctIds = [...new Set(deliveries.map((d) => d.event.distinct_id))];
  const [[project], persons] = await Promise.all([
    db.select({ id: projects.id, name: projects.name }).from(projects).where(eq(projects.id, fn.project_id)),
    personsOf(db, fn.project_id, distinctIds),
  ]);
  const inputs = new Map<number | undefined, ReturnType<typeof mappedInputs>>();
  const ctx: JobContext = {
    fn: fn as JobContext['fn'],
    project: project ?? { id: fn.project_id, name: '' },
    persons,
    fetch: deliveryFetch(options.policy),
    inputsOf: (mapping) => {
      let found = inputs.get(mapping);
      if (!found) inputs.set(mapping, (found = mappedInputs(options.box, fn, mapping)));
      return found;
    },
    lines: [],
  };
  const fates: Fate[] = new Array(deliveries.length).fill('dropped');
  const deadline = Date.now() + JOB_DEADLINE_MS;
  let next = 0;
  const lane = async () => {
    while (next < deliveries.length && Date.now() < deadline) {
      const i = next++;
      fates[i] = await deliverOne(ctx, options, deliveries[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanesPerJob(options), deliveries.length) }, lane));

  const again = (pick: (fate: Fate) => boolean, attempt: (d: Delivery) => number) =>
    deliveries
      .filter((_, i) => pick(fates[i]!))
      .map((d) => ({ ...d, attempt: attempt(d), function_id, project_id, ...(replay_id ? { replay_id } : {}) }));
  // Deliveries the deadline left unstarted go back at once, as they were.
  await enqueueDeliveries(
    boss,
    options.retryDelaySeconds,
    again(
      (f) => f === 'dropped',
      (d) => d.attempt ?? 1,
    ),
  );
  const retries = again(
    (f) => f === 'retry',
    (d) => (d.attempt ?? 1) + 1,
  );
  if (retries.length) {
    const failed = Math.min(...retries.map((d) => d.attempt - 1));
    const startAfter = new Date(Date.now() + retryDelayMs(options.retryDelaySeconds, failed));
    await enqueueDeliveries(boss, options.retryDelaySeconds, retries, startAfter);
  }
  const succeeded = fates.filter((f) => f === 'succeeded').length;
  const dead = fates.filter((f) => f === 'dead').length;
  await Promise.all([
    writeLogBatch(db, fn, ctx.lines),
    addMetric(db, fn.id, 'succeeded', succeeded),
    addMetric(db, fn.id, 'failed', dead),
    replay_id ? countReplay(db, fn.project_id, replay_id, succeeded, dead) : undefined,
  ]);
  return dead && dead === deliveries.length ? 'deadletter' : 'completed';
}

async function countReplay(db: Db, projectId: number, replayId: string, delivered: number, failed: number) {
  if (!delivered && !failed) return;
  await db
    .update(hog_function_replays)
    .set({
      delivered: sql`${hog_function_replays.delivered} + ${delivered}`,
      failed: sql`${hog_function_replays.failed} + ${failed}`,
    })
    .where(and(eq(hog_function_replays.project_id, projectId), eq(hog_function_replays.id, replayId)));
}

/** The worker side of destinations: takes delivery jobs off the queue, one function's at most N at a time. */
export class HogDeliveryWorker {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private db: Db,
    private boss: () => Promise<PgBoss>,
    private options: DeliveryOptions,
  ) {}

  async start(): Promise<void> {
    const boss = await this.boss();
    await deliveryQueue(boss, this.options.retryDelaySeconds);
    const workId = await boss.work<DeliveryJob>(
      DELIVERY_QUEUE,
      {
        batchSize: 4,
        localConcurrency: 4,
        includeMetadata: true,
        perJobResults: true,
        groupConcurrency: Math.max(1, Math.floor(this.options.perFunctionConcurrency / lanesPerJob(this.options))),
        pollingIntervalSeconds: 0.5,
        notifyPollingIntervalSeconds: 5,
      },
      async (jobs) => {
        const results = await Promise.all(
          jobs.map(async (job) => {
            const attributes = {
              'messaging.system': 'pg-boss',
              'messaging.destination.name': DELIVERY_QUEUE,
              'job.id': job.id,
              'job.attempt': job.retryCount + 1,
              'hog_function.id': job.data.function_id,
            };
            try {
              const run = () => deliver(this.db, boss, this.options, job as JobWithMetadata<DeliveryJob>);
              const status = await inSpan(`process ${DELIVERY_QUEUE}`, attributes, run, job.data.trace);
              return { id: job.id, status };
            } catch (err) {
              this.options.log?.('hog function delivery failed', err);
              return { id: job.id, status: 'failed' as const };
            }
          }),
        );
        // A worker whose fetch came back short waits for a NOTIFY (a job queued) or 5 s. The backlog of a
        // function held back by its concurrency announces nothing: the workers (this one too) fetch again
        // as soon as these jobs are done instead.
        for (const w of boss.getWipData()) if (w.workId === workId) boss.notifyWorker(w.id);
        return results;
      },
    );
    this.timer = setInterval(() => void expireTelemetry(this.db).catch(() => undefined), 3_600_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    const boss = await this.boss().catch(() => undefined);
    await boss?.offWork(DELIVERY_QUEUE).catch(() => undefined);
  }
}
