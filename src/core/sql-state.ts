/** The database's own error (with its SQLSTATE) inside the driver's and Drizzle's wrappers. */
export function databaseError(err: unknown): { code: string; message: string } | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return { code, message: String((e as Error).message) };
  }
  return undefined;
}

/** SQLSTATE of a database error, through Drizzle's wrapping. */
export function sqlState(err: unknown): string | undefined {
  return databaseError(err)?.code;
}
