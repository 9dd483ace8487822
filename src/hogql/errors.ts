/**
 * A refused query, with where it went wrong (an offset into the query text) when that is known. `code` is
 * PostHog's (`posthog/hogql/errors.py`): `hogql_syntax_error` for text that does not parse, `hogql_query_error`
 * for a query that parses but cannot run here.
 */
export class QueryError extends Error {
  syntax = false;
  constructor(
    message: string,
    readonly start?: number,
    readonly end?: number,
  ) {
    super(message);
  }

  get code(): string {
    return this.syntax ? 'hogql_syntax_error' : 'hogql_query_error';
  }
}

/** `line 1, column 8`, counted from 1, as PostHog words the position of a syntax error. */
export function position(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}
