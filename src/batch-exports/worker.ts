import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { JobWithMetadata } from 'pg-boss';
import { inSpan } from '../core/tracing.js';
import type { Database } from '../db/client.js';
import { tenantNetwork } from '../net/index.js';
import { RUN_QUEUE, TICK_QUEUE, type JobEngine, type RunJob } from './engine.js';
import { executeRun, RetryRun, type RunOutcome } from './runner.js';
import { requeueOrphans, scheduleDueRuns } from './service.js';
import type { SecretBox } from '../secrets/index.js';

export interface WorkerOptions {
  /** Runs exported at once by this process. */
  concurrency: number;
  /** Records read from the database per batch. */
  batchSize: number;
  /** A run whose worker has not heartbeated for this long may be taken over. */
  staleSeconds: number;
  /** How often an idle worker looks for queued runs. */
  pollSeconds: number;
  log?: (msg: string, err?: unknown) => void;
  /** ALLOW_PRIVATE_NETWORKS: the private networks destinations may reach. */
  allowPrivateNetworks: readonly string[];
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = {
  concurrency: 2,
  batchSize: 20000,
  staleSeconds: 60,
  pollSeconds: 2,
  allowPrivateNetworks: [],
};

/**
 * Executes queued runs and, once a minute, schedules the runs exports owe. Any number of these may
 * run in any number of processes on one database: the job engine hands each job to one worker and
 * the run's claim keeps a run from being exported twice.
 */
export class ExportWorker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private controller = new AbortController();
  private active = new Set<Promise<unknown>>();
  private started = false;
  readonly options: WorkerOptions;
  private secrets: SecretBox;

  /** `secrets` holds the key the API processes encrypt destinations' secrets with. */
  constructor(
    private database: Database,
    private engine: JobEngine,
    { secrets, ...options }: Partial<WorkerOptions> & { secrets: SecretBox },
  ) {
    this.options = { ...DEFAULT_WORKER_OPTIONS, ...options };
    this.secrets = secrets;
  }

  async start(): Promise<void> {
    const boss = await this.engine.boss();
    this.started = true;
    await boss.work(
      RUN_QUEUE,
      {
        includeMetadata: true,
        localConcurrency: this.options.concurrency,
        pollingIntervalSeconds: this.options.pollSeconds,
      },
      async ([job]: JobWithMetadata<RunJob>[]) => {
        if (job) {
          const attributes = {
            'messaging.system': 'pg-boss',
            'messaging.destination.name': RUN_QUEUE,
            'job.id': job.id,
            'batch_export_run.id': job.data.run_id,
            'job.attempt': job.retryCount + 1,
          };
          await this.track(inSpan(`process ${RUN_QUEUE}`, attributes, () => this.handle(job), job.data.trace));
        }
      },
    );
    await boss.work(TICK_QUEUE, { pollingIntervalSeconds: 5 }, async () => {
      await this.track(inSpan(`process ${TICK_QUEUE}`, { 'messaging.system': 'pg-boss' }, () => this.tick()));
    });
    await boss.schedule(TICK_QUEUE, '* * * * *', {}, { tz: 'UTC' });
    void this.track(this.tick()).catch((err) => this.options.log?.('batch export scheduling failed', err));
  }

  private async track<T>(p: Promise<T>): Promise<T> {
    this.active.add(p);
    try {
      return await p;
    } finally {
      this.active.delete(p);
    }
  }

  /** Runs one job; throwing hands the run back to the job engine for a later retry. */
  async handle(job: Pick<JobWithMetadata<RunJob>, 'data' | 'retryCount' | 'retryLimit'>): Promise<RunOutcome> {
    if (this.controller.signal.aborted) throw new RetryRun('The worker is stopping.');
    try {
      return await executeRun(this.database.db, {
        runId: job.data.run_id,
        token: `${this.id}:${randomUUID()}`,
        retryCount: job.retryCount,
        retryLimit: job.retryLimit,
        signal: this.controller.signal,
        batchSize: this.options.batchSize,
        staleSeconds: this.options.staleSeconds,
        secrets: this.secrets,
        network: tenantNetwork(this.options.allowPrivateNetworks, this.database.url),
        ...(this.database.readUrl ? { read: this.database.read } : {}),
      });
    } catch (err) {
      if (!(err instanceof RetryRun)) this.options.log?.('batch export run crashed', err);
      throw err;
    }
  }

  /** Schedules due runs and queues orphaned ones; `now` is settable for tests. */
  async tick(now = new Date()): Promise<void> {
    await scheduleDueRuns(this.database.db, this.engine, now);
    await requeueOrphans(this.database.db, this.engine, this.options.staleSeconds * 2);
  }

  /**
   * Stops taking jobs and hands back the runs in progress: each is marked FailedRetryable and its
   * job fails, so the job engine retries it (here or on another worker). Nothing is lost or doubled.
   */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.controller.abort();
    await Promise.allSettled([...this.active]);
    const boss = await this.engine.boss().catch(() => undefined);
    await boss?.offWork(RUN_QUEUE, { wait: true }).catch(() => {});
    await boss?.offWork(TICK_QUEUE, { wait: true }).catch(() => {});
  }
}
