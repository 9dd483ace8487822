import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { bootstrap } from './bootstrap.js';
import { loadConfig } from './config.js';
import { DataDirLockedError, openDatabase } from './db/client.js';
import { loggerOptions } from './http/logging.js';

const config = loadConfig();

async function main(): Promise<void> {
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize });
  const boot = await bootstrap(database.db, { email: config.bootstrapEmail, apiKey: config.bootstrapApiKey });
  if (boot.generatedKey) {
    // Shown this once: only its hash is stored.
    process.stdout.write(
      `\nCreated ${config.bootstrapEmail} with "Default organization" and "Default project".\n` +
        `Personal API key (all scopes), shown only now:\n\n    ${boot.generatedKey}\n\n`,
    );
  }
  const app = await buildApp({
    config,
    database,
    logger: loggerOptions(config.logLevel),
  });
  closeWithGrace({ delay: 10_000 }, async ({ err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    // Stops accepting connections and waits for in-flight requests before the database goes. A
    // keep-alive connection whose request finishes during the drain would otherwise stay open until
    // its client or the keep-alive timeout closes it, holding the shutdown past the grace delay.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
    await app.close();
    clearInterval(sweep);
    // Handlers of requests whose clients hung up may still be running: let them finish their queries.
    await app.inFlight.settled(5_000);
    await database.close();
  });
  await app.listen({ host: config.host, port: config.port });
}

main().catch((err) => {
  if (err instanceof DataDirLockedError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});
