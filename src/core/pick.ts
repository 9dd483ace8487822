/** The listed keys of `body` that are present: unknown and read-only fields never reach the database. */
export function pick<T extends object, K extends keyof T>(
  body: T | undefined,
  keys: readonly K[],
): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  if (!body) return out;
  for (const k of keys) if (body[k] !== undefined) out[k] = body[k];
  return out;
}
