/** Error codes, as postgres.js, Node and PostgreSQL report them, that say the connection to the database is gone. */
const CONNECTION_LOST = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08003',
  '08006',
]);

/** Whether `err`, or one of its first causes, carries one of `codes`. */
export function hasCode(err: unknown, codes: ReadonlySet<string>): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return true;
  }
  return false;
}

/** Whether `err` says the database could not be reached or dropped the connection: nothing more can be sent on it. */
export function isConnectionLost(err: unknown): boolean {
  return hasCode(err, CONNECTION_LOST);
}
