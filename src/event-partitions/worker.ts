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
 * Runs the events maintenance once at start and then hourly through the job engine (one job an hour for
 * any number of workers; passes that meet anyway take turns on the database functions' advisory lock).
 */
export class EventsMaintenance {
  private started = false;
  private active = new Set<Promise<unknown>>();

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
      await this.track(inSpan(`process ${MAINTENANCE_QUEUE}`, { 'messaging.system': 'pg-boss' }, () => this.run()));
    });
    await boss.schedule(MAINTENANCE_QUEUE, SCHEDULE, {}, { tz: 'UTC' });
    // A first pass now, as the worker starts (a failure is logged; the hourly job tries again).
    void this.track(this.run()).catch(() => {});
  }

  private async track<T>(p: Promise<T>): Promise<T> {
    this.active.add(p);
    try {
      return await p;
    } finally {
      this.active.delete(p);
    }
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
    await Promise.allSettled([...this.active]);
    const boss = await this.boss().catch(() => undefined);
    await boss?.offWork(MAINTENANCE_QUEUE, { wait: true }).catch(() => {});
  }
}
