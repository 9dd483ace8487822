import { sql, type SQL } from 'drizzle-orm';
import { streamReadOnly, type RunTag } from '../queries.js';
import { AnswerRows } from '../answer.js';
import { databaseError } from '../errors.js';
import { statementTarget, type QueryEngine } from '../run.js';

/** What the insight kinds need to run their statements: the process's query engine, whose slot, an async tag. */
export interface Executor {
  engine: QueryEngine;
  organizationId: string;
  tag?: RunTag;
}

/**
 * The one place the insight kinds run SQL: as any Query API statement, in a slot of the organization,
 * read-only under the restricted role and the per-transaction limits, its rows streamed under
 * QUERY_MAX_BYTES; each row a JSON object of its columns. The statement carries its own project scope.
 */
export async function execute<Row>(ex: Executor, statement: SQL): Promise<Row[]> {
  const { engine, organizationId, tag } = ex;
  const { config } = engine;
  const wrapped = sql`select row_to_json(q) as r from (${statement}) as q`;
  const rows = new AnswerRows(Number.POSITIVE_INFINITY, config.queryMaxBytes);
  const target = statementTarget(engine, tag);
  await engine.limiter.run(organizationId, () =>
    streamReadOnly(target.db, wrapped, {
      timeoutMs: config.queryTimeoutSeconds * 1000,
      maxBytes: config.queryMaxBytes,
      tag,
      limits: target.limits,
      onRow: (json) => rows.add(json),
    }).catch((err: unknown) => {
      throw databaseError(err, config) ?? err;
    }),
  );
  return rows.rows.map((json) => JSON.parse(json.toString('utf8')) as Row);
}
