/**
 * A failure to reach a tenant-supplied address, worded the same whatever the cause (refused, timed out, reset,
 * unknown name).
 */
export class ConnectionFailedError extends Error {
  override name = 'ConnectionFailedError';
  constructor(target: string) {
    super(`Could not connect to ${target}.`);
  }
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EADDRNOTAVAIL',
]);

/** Whether `err` is a socket-level failure (whose code would tell a closed port from a filtered one). */
export function isConnectionFailure(err: unknown): boolean {
  const e = err as { code?: string; name?: string } | undefined;
  return NETWORK_CODES.has(e?.code ?? '') || e?.name === 'TimeoutError';
}
