import { sql, type SQL } from 'drizzle-orm';
import type { Config } from '../../config.js';
import type { Db } from '../../db/client.js';
import { runReadOnly, type RunTag } from '../../db/queries/query.js';
import { databaseError } from '../errors.js';
import { queryLimiter } from '../run.js';

/** What the insight kinds need to run their statements: the database, the server's limits, an async tag. */
export interface Executor {
  db: Db;
  config: Config;
  tag?: RunTag;
}

/**
 * The one place the insight kinds run SQL: a read-only statement through the Query API's limiter and
 * timeout, each row as a JSON object of its columns. The statement must carry its own project scope.
 */
export async function execute<Row>(ex: Executor, statement: SQL): Promise<Row[]> {
  const { db, config, tag } = ex;
  const wrapped = sql`select row_to_json(q) as r from (${statement}) as q`;
  const rows = await queryLimiter(config).run(() =>
    runReadOnly(db, wrapped, config.queryTimeoutSeconds * 1000, tag).catch((err: unknown) => {
      throw databaseError(err, config.queryTimeoutSeconds) ?? err;
    }),
  );
  return rows as unknown as Row[];
}
