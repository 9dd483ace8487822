import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What a proxy's or client's id may be: short, and nothing a log line or header could be bent by. */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's id: the caller's `X-Request-Id` when it is a safe one (so one id follows a request
 * through a proxy and here), else a new UUID. Every log line of the request and its answer carry it.
 */
export function requestId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SAFE_ID.test(given) ? given : randomUUID();
}
