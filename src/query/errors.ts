import { ApiError } from '../core/errors.js';
import { sqlState } from '../core/sql-state.js';
import { answerTooLarge } from './answer.js';

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
export function databaseError(
  err: unknown,
  limits: { queryTimeoutSeconds: number; queryTempFileLimitMb: number; queryMaxBytes: number },
): ApiError | undefined {
  const state = sqlState(err);
  if (!state) return undefined;
  // query_answer_within (drizzle/0028): the answer passed QUERY_MAX_BYTES.
  if (state === 'PH413') return answerTooLarge(limits.queryMaxBytes);
  if (state === '57014') {
    return ApiError.validation(
      null,
      `Query exceeded the time limit of ${limits.queryTimeoutSeconds} seconds. Narrow it with a time range on ` +
        `timestamp, fewer joins or a LIMIT.`,
      'timeout_exceeded',
    );
  }
  const message = messageOf(err);
  // temp_file_limit: a sort or join that spilled more to disk than one query may.
  if (state === '53400' && /temp_file_limit/.test(message)) {
    return ApiError.validation(
      null,
      `Query used more than the ${limits.queryTempFileLimitMb} MB of temporary disk space one query may use (to ` +
        'sort or join more rows than fit in memory). Narrow it with a time range on timestamp, fewer joins or ' +
        'an aggregate.',
      'memory_limit_exceeded',
    );
  }
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
