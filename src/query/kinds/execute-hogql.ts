import { compileQuery, parseOwnQuery, printQuery, QueryError, type Query } from '../../hogql/index.js';
import { ApiError } from '../../core/errors.js';
import { AnswerRows } from '../answer.js';
import { runStatement } from '../run.js';
import type { Executor } from './execute.js';

/** HogQL an insight kind wrote: a text with `{placeholders}` (parsed once, whatever the dates) and their values. */
export interface KindHogQL {
  text: string;
  values: Record<string, string | number | string[]>;
}

/** The most rows one of a kind's statements answers (buckets times breakdown values); bytes are capped too. */
const MAX_KIND_ROWS = 1_000_000;

/** A parsed query with its placeholders replaced by their values: the HogQL as PostHog's `hogql` shows it. */
function inline(query: Query, values: KindHogQL['values']): Query {
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (!value || typeof value !== 'object') return value;
    const node = value as Record<string, unknown>;
    if (node.k === 'placeholder' && typeof node.name === 'string' && Object.hasOwn(values, node.name)) {
      const v = values[node.name]!;
      const pos = node.pos;
      return Array.isArray(v)
        ? { k: 'array', items: v.map((x) => ({ k: 'const', value: x, pos })), pos }
        : { k: 'const', value: v, pos };
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, visit(v)]));
  };
  return visit(query) as Query;
}

/**
 * Runs a kind's HogQL for one project through the one compiler, as any Query API statement: in a slot of
 * the organization, read-only under the restricted role and the per-transaction limits, in the project's
 * timezone, its rows streamed under QUERY_MAX_BYTES. Each row an object by the query's column names; `hogql`
 * the query with its values written in.
 */
export async function executeHogQL<Row>(
  ex: Executor,
  teamId: number,
  timezone: string,
  q: KindHogQL,
): Promise<{ rows: Row[]; hogql: string }> {
  const { engine, organizationId, tag } = ex;
  let compiled: ReturnType<typeof compileQuery>;
  let parsed: Query;
  try {
    parsed = await parseOwnQuery(q.text);
    compiled = compileQuery(parsed, {
      teamId,
      timezone,
      values: q.values,
      defaultLimit: MAX_KIND_ROWS,
      maxLimit: MAX_KIND_ROWS,
    });
  } catch (err) {
    if (err instanceof QueryError) throw ApiError.validation(null, err.message, err.code);
    throw err;
  }
  const rows = new AnswerRows(MAX_KIND_ROWS, engine.config.queryMaxBytes);
  await runStatement(engine, organizationId, compiled.sql, rows, { tag, timezone: compiled.timezone });
  const names = compiled.columns;
  const objects = rows.rows.map((json) => {
    const values = JSON.parse(json.toString('utf8')) as unknown[];
    return Object.fromEntries(names.map((n, i) => [n, values[i]])) as Row;
  });
  return { rows: objects, hogql: printQuery(inline(parsed, q.values)) };
}
