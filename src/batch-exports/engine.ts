import { PgBoss } from 'pg-boss';
import { traceCarrier, type TraceCarrier } from '../core/tracing.js';
import type { Database } from '../db/client.js';
import type { RunRow } from './queries.js';

/** One job per run to export; `exclusive` keeps at most one queued or active job per run id. */
export const RUN_QUEUE = 'batch-export-run';
/** The scheduler's minute tick. */
export const TICK_QUEUE = 'batch-export-tick';

export interface EngineOptions {
  /** Whether this instance runs pg-boss maintenance and cron (only processes that run workers do). */
  supervise: boolean;
  retryLimit: number;
  retryDelaySeconds: number;
  /** The longest one run may take before it is retried elsewhere. */
  runTimeoutSeconds: number;
  /** A job whose worker stopped heartbeating for this long (at least 10) is failed and retried. */
  heartbeatSeconds?: number;
  log?: (msg: string, err?: unknown) => void;
}

export interface RunJob {
  run_id: string;
  /** The trace of the request or tick that queued the run, when tracing is on. */
  trace?: TraceCarrier;
}

/**
 * The job engine: pg-boss on the same PostgreSQL as everything else, through its own small pool.
 * Started lazily, so a process that never enqueues never installs or polls anything.
 */
export class JobEngine {
  private starting: Promise<PgBoss> | undefined;

  constructor(
    private database: Database,
    readonly options: EngineOptions,
  ) {}

  boss(): Promise<PgBoss> {
    this.starting ??= this.start().catch((err) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  private async start(): Promise<PgBoss> {
    const { supervise } = this.options;
    const heartbeatSeconds = Math.max(10, Math.round(this.options.heartbeatSeconds ?? 30));
    // Jobs whose worker went silent are failed (and retried) at the next supervision pass, so passes
    // come as often as the heartbeat timeout.
    const common = {
      supervise,
      schedule: supervise,
      migrate: true,
      superviseIntervalSeconds: Math.min(60, heartbeatSeconds),
    };
    const boss = new PgBoss({
      ...common,
      connectionString: this.database.url,
      max: 4,
      application_name: 'batch-exports',
    });
    boss.on('error', (err) => this.options.log?.('job engine error', err));
    await boss.start();
    await boss.createQueue(RUN_QUEUE, {
      policy: 'exclusive',
      retryLimit: this.options.retryLimit,
      retryDelay: this.options.retryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: this.options.runTimeoutSeconds,
      // A worker that dies mid-run stops heartbeating; its job is retried instead of waiting for the timeout.
      heartbeatSeconds,
    });
    await boss.createQueue(TICK_QUEUE, { policy: 'singleton', retryLimit: 0, expireInSeconds: 300 });
    return boss;
  }

  /** Queues each run's export, deferred until its interval has ended. Sending a queued run again is a no-op. */
  async enqueueRuns(runs: Pick<RunRow, 'id' | 'data_interval_end'>[]): Promise<void> {
    if (!runs.length) return;
    const boss = await this.boss();
    const now = Date.now();
    const trace = traceCarrier();
    const jobs = runs.map((run) => ({
      data: { run_id: run.id, ...(trace ? { trace } : {}) } satisfies RunJob,
      singletonKey: run.id,
      ...(run.data_interval_end.getTime() > now ? { startAfter: run.data_interval_end } : {}),
    }));
    for (let i = 0; i < jobs.length; i += 500) await boss.insert(RUN_QUEUE, jobs.slice(i, i + 500));
  }

  async stop(): Promise<void> {
    const starting = this.starting;
    this.starting = undefined;
    if (!starting) return;
    const boss = await starting.catch(() => undefined);
    await boss?.stop({ graceful: true, timeout: 10_000, close: true });
  }
}
