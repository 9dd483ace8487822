import { ApiError } from '../core/errors.js';
import type { QueryError } from '../hogql/query/index.js';
import { sqlState } from '../core/sql-state.js';

/** A refused query as PostHog answers it: a 400 validation error naming what is wrong. */
export function queryError(err: QueryError, attr: string | null = null): ApiError {
  return ApiError.validation(attr, err.message);
}

function messageOf(err: unknown): string {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
      return String((e as { message?: unknown }).message ?? '');
  }
  return '';
}

/**
 * What PostgreSQL refused while running a compiled query, as a 400: bad data in the query or the rows
 * (22xxx: a division, a cast, a regular expression), a query the compiler let through but PostgreSQL
 * cannot plan (42xxx), or one that outgrew a limit (53xxx, 54xxx). The statement timeout says so.
 * Anything else (the database is down, a bug) is not the query's fault and goes on to the usual handler.
 */
export function databaseError(err: unknown, timeoutSeconds: number): ApiError | undefined {
  const state = sqlState(err);
  if (!state) return undefined;
  if (state === '57014') {
    return ApiError.validation(
      null,
      `Query exceeded the time limit of ${timeoutSeconds} seconds. Narrow it with a time range on timestamp, fewer ` +
        `joins or a LIMIT.`,
      'timeout_exceeded',
    );
  }
  const message = messageOf(err);
  if (state === '42803' && /must appear in the GROUP BY/i.test(message)) {
    return ApiError.validation(
      null,
      'Every selected field must be in GROUP BY or inside an aggregate function such as count()',
    );
  }
  if (/^(22|42|53|54|2F|39)/.test(state))
    return ApiError.validation(null, `Query failed: ${message.replace(/"t\d+"\./g, '')}`);
  return undefined;
}
