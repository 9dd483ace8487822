import type { PgBoss } from 'pg-boss';
import { inSpan } from '../core/tracing.js';
import type { Db } from '../db/client.js';
import { maintainEvents, type MaintenanceResult } from './maintain.js';

/** The events table's periodic job: partitions made ahead, and retention. */
export const MAINTENANCE_QUEUE = 'events-maintenance';
/** Hourly, off the hour: a pass that could not take its locks (a long query) is simply tried again. */
const SCHEDULE = '23 * * * *';

export interface MaintenanceOptions {
  retentionDays: number | undefined;
  log?: (msg: string, err?: unknown) => void;
  /** Called after each pass, with what it did (logged when it did something). */
  done?: (result: MaintenanceResult) => void;
}

/**
 * Runs the events maintenance once at start and then hourly through the job engine, so that with any
 * number of workers one pass runs at a time (the database functions also take an advisory lock).
 */
export class EventsMaintenance {
  private started = false;

  constructor(
    private db: Db,
    private boss: () => Promise<PgBoss>,
    private options: MaintenanceOptions,
  ) {}

  async start(): Promise<void> {
    const boss = await this.boss();
    await boss.createQueue(MAINTENANCE_QUEUE, { policy: 'singleton', retryLimit: 0, expireInSeconds: 1800 });
    this.started = true;
    await boss.work(MAINTENANCE_QUEUE, { pollingIntervalSeconds: 30 }, async () => {
      await inSpan(`process ${MAINTENANCE_QUEUE}`, { 'messaging.system': 'pg-boss' }, () => this.run());
    });
    await boss.schedule(MAINTENANCE_QUEUE, SCHEDULE, {}, { tz: 'UTC' });
    await boss.send(MAINTENANCE_QUEUE, {});
  }

  /** One pass; `now` is settable for tests. */
  async run(now = new Date()): Promise<MaintenanceResult> {
    try {
      const result = await maintainEvents(this.db, now, this.options.retentionDays);
      this.options.done?.(result);
      return result;
    } catch (err) {
      this.options.log?.('events maintenance failed (tried again next hour)', err);
      throw err;
    }
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    const boss = await this.boss().catch(() => undefined);
    await boss?.offWork(MAINTENANCE_QUEUE, { wait: true }).catch(() => {});
  }
}
