// `npm run worker`: a process that only exports batch export runs, for running exports on machines
// of their own. Any number of them (and of API processes with WORKER on) can share one PostgreSQL.
import closeWithGrace from 'close-with-grace';
import { createJobEngine, createWorker } from './batch-exports/index.js';
import { configOrExit } from './config.js';
import { openDatabase } from './db/client.js';
import { createDeliveryWorker } from './hog-functions/index.js';
import { createEventsMaintenance } from './event-partitions/index.js';
import { connectionBudgetWarning, replicaBudgetWarning } from './db/pool-budget.js';
import { serializeError } from './http/logging.js';
import { registerGauges } from './metrics/gauges.js';
import { enableMetrics } from './metrics/registry.js';
import { serveMetrics } from './metrics/serve.js';
import { GUARDED_EVENTS, guardProcess } from './process-guard.js';
import { prepareSecretBox } from './secrets/index.js';
import { startTracing } from './tracing.js';
import { logLine } from './core/log-line.js';

const config = configOrExit();
// Checked with the rest of the configuration, before anything is opened: the same one line and exit code.
if (!config.databaseUrl) {
  process.stderr.write(
    'Invalid configuration: DATABASE_URL: expected a postgres:// or postgresql:// URL (the embedded database ' +
      'belongs to the server, which runs a worker itself with WORKER=1)\n',
  );
  process.exit(2);
}
const databaseUrl = config.databaseUrl;

// LOG_LEVEL as pino applies it in the server: lines below it are not written.
const PINO_LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
const threshold = PINO_LEVELS[config.logLevel] ?? Number.POSITIVE_INFINITY;
const log: typeof logLine = (level, msg, fields) => {
  if (PINO_LEVELS[level]! >= threshold) logLine(level, msg, fields);
};

const logError = (msg: string, err?: unknown) => log('error', msg, { err: serializeError(err) });

async function main(): Promise<void> {
  guardProcess(logError);
  const stopTracing = await startTracing(config, 'worker');
  const database = await openDatabase({
    url: databaseUrl,
    readUrl: config.databaseReadUrl,
    poolSize: config.exportConcurrency + 4,
  });
  // Here, before any run: a bad ENCRYPTION_KEY stops the worker at once.
  prepareSecretBox(config, (msg) => log('warn', msg));
  const budget = await connectionBudgetWarning(database, config.exportConcurrency + 4).catch(() => undefined);
  if (budget) log('warn', budget);
  const replicaBudget = await replicaBudgetWarning(database, config.exportConcurrency + 4).catch(() => undefined);
  if (replicaBudget) log('warn', replicaBudget);
  const jobs = createJobEngine(database, config, true, logError);
  const worker = createWorker(database, jobs, config, logError);
  const deliveries = createDeliveryWorker(database.db, jobs, config, logError);
  const maintenance = createEventsMaintenance(database.db, jobs, config, logError, (r) => {
    if (r.created || r.dropped || r.deleted) log('info', 'events maintenance', { ...r });
  });
  closeWithGrace({ delay: 30_000, skip: [...GUARDED_EVENTS] }, async ({ err, signal }) => {
    if (err) logError('shutting down after an error', err);
    else log('info', 'shutting down: handing running exports back', { signal });
    // Running exports are handed back as FailedRetryable; another worker (or this one, restarted) retries them.
    await worker.stop();
    await deliveries.stop();
    await maintenance.stop();
    await jobs.stop();
    await database.close();
    await stopTracing();
    log('info', 'batch export worker stopped', { worker: worker.id });
  });
  await worker.start();
  await deliveries.start();
  await maintenance.start();
  if (config.metricsPort !== undefined) {
    enableMetrics();
    registerGauges({ database, poolSize: config.exportConcurrency + 4, jobs });
    const metrics = await serveMetrics(config.metricsHost, config.metricsPort);
    log('info', 'metrics listening', { url: metrics.url });
  }
  log('info', 'batch export worker started', { worker: worker.id, concurrency: config.exportConcurrency });
}

main().catch((err) => {
  logError('could not start', err);
  process.exit(1);
});
