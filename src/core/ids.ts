const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** PostgreSQL's `integer`, the type of every serial id. */
export const MAX_INT4 = 2147483647;

/** Whether `s` is a UUID in its canonical hyphenated form, in either case (PostHog accepts both). */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** Whether `n` can be a row id; anything else cannot name a row and must not reach an int4 column. */
export function isRowId(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_INT4;
}

/** The row id a path segment or argument spells in decimal digits, or undefined when it spells none. */
export function rowIdOf(text: string): number | undefined {
  const n = /^\d+$/.test(text) ? Number(text) : undefined;
  return isRowId(n) ? n : undefined;
}
