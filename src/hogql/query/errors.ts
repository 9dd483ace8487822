import { HogQLError } from '../ast.js';

/** A refused query, with where it went wrong (an offset into the query text) when that is known. */
export class QueryError extends HogQLError {
  constructor(
    message: string,
    readonly start?: number,
    readonly end?: number,
  ) {
    super(message);
  }
}

/** `line 1, column 8`, counted from 1, as PostHog words the position of a syntax error. */
export function position(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}
