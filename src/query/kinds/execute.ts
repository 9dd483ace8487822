import { sql, type SQL } from 'drizzle-orm';
import type { RunTag } from '../queries.js';
import { AnswerRows } from '../answer.js';
import { runStatement, type QueryEngine } from '../run.js';

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
  const wrapped = sql`select row_to_json(q) as r from (${statement}) as q`;
  const rows = new AnswerRows(Number.POSITIVE_INFINITY, ex.engine.config.queryMaxBytes);
  await runStatement(ex.engine, ex.organizationId, wrapped, rows, { tag: ex.tag });
  return rows.rows.map((json) => JSON.parse(json.toString('utf8')) as Row);
}
