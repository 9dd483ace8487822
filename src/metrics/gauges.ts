import { sql } from 'drizzle-orm';
import { Gauge } from 'prom-client';
import type { JobEngine } from '../batch-exports/index.js';
import { countPoolQueries, type Database } from '../db/client.js';
import { registry } from './registry.js';

interface Sources {
  database: Database;
  poolSize: number;
  jobs?: JobEngine;
}

type Rows<T> = T[] & Iterable<T>;

/**
 * Gauges read at scrape time from PostgreSQL and the job engine. A source that fails to answer leaves
 * its gauge empty for that scrape rather than failing the whole page.
 */
export function registerGauges({ database, poolSize, jobs }: Sources): void {
  new Gauge({
    name: 'posthog_db_pool_size',
    help: "Connections this process's pool may open.",
    registers: [registry],
    collect() {
      this.set(poolSize);
    },
  });
  const queries = countPoolQueries();
  new Gauge({
    name: 'posthog_db_pool_queries',
    help: "This process's queries not answered yet: waiting for a connection of its pool, or running on one.",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { waiting, running } = queries();
      this.set({ state: 'waiting' }, waiting);
      this.set({ state: 'running' }, running);
    },
  });
  new Gauge({
    name: 'posthog_db_connections',
    help: "Connections to this database by state (every process's, as pg_stat_activity sees them).",
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const rows = (await database.db
        .execute(
          sql`select coalesce(state, 'unknown') as state, count(*)::int as n from pg_stat_activity
              where datname = current_database() and pid <> pg_backend_pid() group by 1`,
        )
        .catch(() => [])) as Rows<{ state: string; n: number }>;
      for (const r of rows) this.set({ state: r.state }, r.n);
    },
  });
  new Gauge({
    name: 'posthog_batch_export_runs',
    help: 'Batch export runs by status (all projects together).',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const rows = (await database.db
        .execute(sql`select status, count(*)::int as n from batch_export_runs group by status`)
        .catch(() => [])) as Rows<{ status: string; n: number }>;
      for (const r of rows) this.set({ status: r.status }, r.n);
    },
  });
  if (!jobs) return;
  new Gauge({
    name: 'posthog_job_queue_jobs',
    help: "Jobs in the job engine's queues, by queue and state (as of the engine's last count).",
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const queues = await jobs
        .boss()
        .then((boss) => boss.getQueues())
        .catch(() => []);
      for (const q of queues) {
        this.set({ queue: q.name, state: 'ready' }, q.readyCount);
        this.set({ queue: q.name, state: 'deferred' }, q.deferredCount);
        this.set({ queue: q.name, state: 'active' }, q.activeCount);
        this.set({ queue: q.name, state: 'failed' }, q.failedCount);
      }
    },
  });
}
