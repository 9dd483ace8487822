import closeWithGrace from 'close-with-grace';
import { resolve } from 'node:path';
import { buildApp } from './app.js';
import { createJobEngine, createWorker } from './batch-exports/index.js';
import { createDeliveryWorker } from './hog-functions/index.js';
import {
  createEventsMaintenance,
  ensurePartitions,
  retentionCutoff,
  type MaintenanceResult,
} from './event-partitions/index.js';
import { bootstrap } from './bootstrap.js';
import { configOrExit } from './config.js';
import { openDatabase, type Database } from './db/client.js';
import { DataDirError } from './db/embedded.js';
import { connectionBudgetWarning, replicaBudgetWarning } from './db/pool-budget.js';
import { loggerOptions, serializeError } from './http/logging.js';
import { registerGauges } from './metrics/gauges.js';
import { serveMetrics } from './metrics/serve.js';
import { prepareSecretBox } from './secrets/index.js';
import { sealStoredSecrets } from './stored-secrets/seal.js';
import { logLine } from './core/log-line.js';
import { GUARDED_EVENTS, guardProcess } from './process-guard.js';
import { startTracing } from './tracing.js';

const config = configOrExit();

async function main(): Promise<void> {
  const stopTracing = await startTracing(config, 'server');
  const database = await openDatabase({
    url: config.databaseUrl,
    readUrl: config.databaseReadUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
  });
  try {
    await serve(database, stopTracing);
  } catch (err) {
    // A start that fails after the database opened (the port taken, say) stops the embedded cluster too.
    await database.close().catch(() => {});
    throw err;
  }
}

async function serve(database: Database, stopTracing: () => Promise<void>): Promise<void> {
  if (database.embeddedHome && database.embeddedHome !== resolve(config.dataDir)) {
    logLine('warn', 'The postgres system user cannot reach DATA_DIR, so the embedded cluster is kept elsewhere', {
      data_dir: resolve(config.dataDir),
      cluster: database.embeddedHome,
    });
  }
  const boot = await bootstrap(database.db, { email: config.bootstrapEmail, apiKey: config.bootstrapApiKey });
  if (boot.generatedKey) {
    // Shown this once: only its hash is stored.
    logLine('info', 'Created the first user, organization and project; its personal API key is shown only now', {
      email: config.bootstrapEmail,
      organization: 'Default organization',
      project: 'Default project',
      personal_api_key: boot.generatedKey,
      scopes: ['*'],
    });
  }
  // The months around now get their partitions before the first event arrives (the worker's hourly job
  // keeps them ahead). A pass that cannot take its locks is not fatal: events of a month without a
  // partition are stored in the default one, and moved when the next pass makes it.
  await ensurePartitions(database.db, new Date(), retentionCutoff(new Date(), config.eventsRetentionDays)).catch(
    (err) =>
      logLine('warn', 'could not make the events partitions ahead; the hourly job tries again', {
        err: serializeError(err),
      }),
  );
  const secrets = prepareSecretBox(config, (msg) => logLine('warn', msg));
  const sealed = await sealStoredSecrets(database.db, secrets);
  if (sealed.exports || sealed.pluginConfigs) {
    logLine('info', 'Encrypted the stored secrets of older versions', {
      batch_exports: sealed.exports,
      plugin_configs: sealed.pluginConfigs,
    });
  }
  let log = (msg: string, err?: unknown): void => logLine('error', msg, { err: serializeError(err) });
  guardProcess((msg, err) => log(msg, err));
  // With WORKER on (the default) this process also exports: its job engine supervises and a worker runs.
  const jobs = createJobEngine(database, config, config.worker, (msg, err) => log(msg, err));
  const app = await buildApp({
    config,
    database,
    jobs,
    logger: loggerOptions(config.logLevel),
  });
  log = (msg, err) => void app.log.error({ err }, msg);
  const worker = config.worker ? createWorker(database, jobs, config, (msg, err) => log(msg, err)) : undefined;
  const deliveries = config.worker ? createDeliveryWorker(database.db, jobs, config, (m, e) => log(m, e)) : undefined;
  const maintenance = config.worker
    ? createEventsMaintenance(database.db, jobs, config, (m, e) => log(m, e), logMaintenance)
    : undefined;
  // The workers start once the server listens; a signal may arrive before they have.
  let workersStarted: Promise<void> = Promise.resolve();
  closeWithGrace({ delay: 30_000, skip: [...GUARDED_EVENTS] }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down: draining requests');
    // Stops accepting connections and waits for in-flight requests before the database goes. A
    // keep-alive connection whose request finishes during the drain would otherwise stay open until
    // its client or the keep-alive timeout closes it, holding the shutdown past the grace delay.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
    await app.close();
    clearInterval(sweep);
    // Handlers of requests whose clients hung up may still be running: let them finish their queries.
    await app.inFlight.settled(5_000);
    // A start still under way finishes first: stopping a half-started job engine under it, then closing
    // the database, failed the start and the process exited 1 on a plain SIGTERM.
    await workersStarted.catch(() => {});
    // Then running exports go back to the queue (they stay retryable) before the database goes.
    await worker?.stop();
    await deliveries?.stop();
    await maintenance?.stop();
    await jobs.stop();
    await database.close();
    await stopTracing();
    app.log.info('stopped');
  });
  const budget = await connectionBudgetWarning(database, config.databasePoolSize).catch(() => undefined);
  if (budget) app.log.warn(budget);
  const replicaBudget = await replicaBudgetWarning(database, config.databasePoolSize).catch(() => undefined);
  if (replicaBudget) app.log.warn(replicaBudget);
  if (config.metricsPort !== undefined) {
    registerGauges({ database, poolSize: config.databasePoolSize, jobs });
    const metrics = await serveMetrics(config.metricsHost, config.metricsPort);
    app.addHook('onClose', async () => void metrics.server.close());
    app.log.info({ url: metrics.url }, 'metrics listening');
  }
  await app.listen({ host: config.host, port: config.port });
  workersStarted = (async () => {
    if (worker) {
      await worker.start();
      app.log.info({ worker: worker.id }, 'batch export worker started');
    }
    await deliveries?.start();
    await maintenance?.start();
  })();
  await workersStarted;
}

/** A maintenance pass that changed something says what. */
function logMaintenance(r: MaintenanceResult): void {
  if (r.created || r.dropped || r.deleted) logLine('info', 'events maintenance', { ...r });
}

main().catch((err) => {
  if (err instanceof DataDirError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
