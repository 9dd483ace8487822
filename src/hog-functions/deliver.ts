import { and, eq, sql } from 'drizzle-orm';
import type { JobWithMetadata, PgBoss } from 'pg-boss';
import { inSpan } from '../core/tracing.js';
import type { Db } from '../db/client.js';
import { hog_function_replays, projects } from '../db/schema/index.js';
import type { NetworkPolicy } from '../net/index.js';
import type { SecretBox } from '../secrets/index.js';
import { resolveInputs, runHog, type RunResult } from './execute.js';
import { deliveryFetch } from './fetch.js';
import { invocationGlobals, type PersonInput } from './globals.js';
import { mappedInputs } from './mappings.js';
import { liveFunction, personsOf } from './queries.js';
import { DELIVERY_ATTEMPTS, DELIVERY_QUEUE, deliveryQueue, type DeliveryJob } from './queue.js';
import { addMetric, expireTelemetry, writeLogs } from './telemetry.js';

export interface DeliveryOptions {
  box: SecretBox;
  policy: NetworkPolicy;
  siteUrl: string;
  retryDelaySeconds: number;
  /** Deliveries of one function running at once, across every worker process. */
  perFunctionConcurrency: number;
  log?: (msg: string, err?: unknown) => void;
}

async function countReplay(db: Db, projectId: number, replayId: string | undefined, ok: boolean) {
  if (!replayId) return;
  const column = ok ? hog_function_replays.delivered : hog_function_replays.failed;
  await db
    .update(hog_function_replays)
    .set(ok ? { delivered: sql`${column} + 1` } : { failed: sql`${column} + 1` })
    .where(and(eq(hog_function_replays.project_id, projectId), eq(hog_function_replays.id, replayId)));
}

type Outcome = 'completed' | 'failed' | 'deadletter';

/**
 * Runs one delivery job: the function as it is now (disabled or deleted since: dropped), with its
 * inputs resolved on the event and `fetch` through the network policy. A retryable failure is given
 * back to the queue until the last attempt, which is the dead letter: logged and counted `failed`.
 */
export async function deliver(db: Db, options: DeliveryOptions, job: JobWithMetadata<DeliveryJob>): Promise<Outcome> {
  const { function_id, event, replay_id } = job.data;
  const fn = await liveFunction(db, function_id);
  if (!fn?.bytecode || fn.project_id !== job.data.project_id) return 'completed';
  const [project] = await db
    .select({ id: projects.id, name: projects.name })
    .from(projects)
    .where(eq(projects.id, fn.project_id));
  const person = (await personsOf(db, fn.project_id, [event.distinct_id])).get(event.distinct_id) ?? null;
  const globals = invocationGlobals(options.siteUrl, project ?? { id: fn.project_id, name: '' }, event, person, fn);
  const attempt = job.retryCount + 1;
  let run: RunResult;
  try {
    const { inputs, secrets } = mappedInputs(options.box, fn, job.data.mapping);
    globals.inputs = resolveInputs(inputs, globals);
    run = await runHog(fn.bytecode, globals, { fetch: deliveryFetch(options.policy), secrets });
  } catch (err) {
    run = { result: null, error: (err as Error).message, logs: [], retryable: false };
  }
  const last = attempt >= DELIVERY_ATTEMPTS;
  const lines = [
    {
      level: 'DEBUG' as const,
      message: `Executing function for event ${event.uuid} (attempt ${attempt}).`,
      timestamp: new Date(),
    },
    ...run.logs,
  ];
  if (run.error && run.retryable && !last) {
    lines.push({
      level: 'WARN',
      message: `Attempt ${attempt} failed; it will be retried: ${run.error}`,
      timestamp: new Date(),
    });
    await writeLogs(db, fn, job.id, lines);
    return 'failed';
  }
  if (run.error) {
    lines.push({
      level: 'ERROR',
      message: `Delivery failed after ${attempt} attempt${attempt > 1 ? 's' : ''} (dead letter): ${run.error}`,
      timestamp: new Date(),
    });
  }
  await writeLogs(db, fn, job.id, lines);
  await addMetric(db, fn.id, run.error ? 'failed' : 'succeeded');
  await countReplay(db, fn.project_id, replay_id, !run.error);
  return run.error ? 'deadletter' : 'completed';
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
    await boss.work<DeliveryJob>(
      DELIVERY_QUEUE,
      {
        batchSize: 8,
        localConcurrency: 4,
        includeMetadata: true,
        perJobResults: true,
        groupConcurrency: this.options.perFunctionConcurrency,
        pollingIntervalSeconds: 0.5,
        notifyPollingIntervalSeconds: 5,
      },
      async (jobs) =>
        Promise.all(
          jobs.map(async (job) => {
            const attributes = {
              'messaging.system': 'pg-boss',
              'messaging.destination.name': DELIVERY_QUEUE,
              'job.id': job.id,
              'job.attempt': job.retryCount + 1,
              'hog_function.id': job.data.function_id,
            };
            try {
              const run = () => deliver(this.db, this.options, job as JobWithMetadata<DeliveryJob>);
              const status = await inSpan(`process ${DELIVERY_QUEUE}`, attributes, run, job.data.trace);
              return { id: job.id, status };
            } catch (err) {
              this.options.log?.('hog function delivery failed', err);
              return { id: job.id, status: 'failed' as const };
            }
          }),
        ),
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
