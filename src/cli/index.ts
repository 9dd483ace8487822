// Operator commands on the server's database. Each prints exactly one JSON document on stdout;
// a mistake prints one line on stderr and exits non-zero.
import { parseArgs } from 'node:util';
import { configOrExit } from '../config.js';
import { openDatabase, type Database } from '../db/client.js';
import { DataDirError } from '../db/embedded.js';
import { AuthCache } from '../auth/cache.js';
import { commands, CliError } from './commands.js';

const USAGE = `usage: npm run --silent cli -- <command> [--flags]
  create-user --email E [--first-name F] [--last-name L]
  create-organization --email OWNER_EMAIL --name N
  add-member --organization ORG_ID --email E --level 1|8|15
  create-project --organization ORG_ID --name N
  create-key --email E [--label L] [--scopes a:read,b:write|*] [--scoped-teams 1,2] [--scoped-organizations U1,U2]
  backup --to FILE          a consistent copy of every table, taken while the server runs
  restore --from FILE       into a database with no data yet (a fresh DATA_DIR or database)`;

async function main(): Promise<number> {
  const [name, ...rest] = process.argv.slice(2);
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(`${name ? `unknown command: ${name}\n` : ''}${USAGE}\n`);
    return 2;
  }
  let flags: Record<string, string | undefined>;
  try {
    flags = parseArgs({ args: rest, options: command.options, strict: true, allowPositionals: false }).values as Record<
      string,
      string | undefined
    >;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const config = configOrExit();
  let database: Database | undefined;
  try {
    // Beside a running server this uses its embedded cluster; alone, it starts the cluster for the command.
    database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolSize: 2, exclusive: false });
    const result = await command.run(database.db, flags, database);
    // Running servers on the same PostgreSQL drop cached permissions at once.
    await new AuthCache(database).invalidate();
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    const message =
      err instanceof CliError || err instanceof DataDirError
        ? (err as Error).message
        : String((err as Error).message ?? err);
    process.stderr.write(`${message.split('\n')[0]}\n`);
    return 1;
  } finally {
    await database?.close();
  }
}

process.exitCode = await main();
