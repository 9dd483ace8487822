import { hasCode, isConnectionLost } from '../db/connection-lost.js';

/** A database call of an export that did not answer in time: the run fails (retryably) instead of hanging. */
export class DeadlineError extends Error {
  readonly code = 'DEADLINE_EXCEEDED';
}

/**
 * `work`, or a DeadlineError after `ms`. The work is not stopped (a driver call cannot be); whoever
 * owns its connection discards it. A rejection of the abandoned work is swallowed.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what} did not answer within ${Math.round(ms / 1000)} s`)), ms);
  });
  work.catch(() => {});
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * `work`, or `stopped()`'s error once `signal` aborts. The listener goes when the work settles: racing
 * each step against one promise that lives as long as the run would keep every step's result (each a
 * whole batch of records) reachable from that promise until the run ends.
 */
export function unlessAborted<T>(work: Promise<T>, signal: AbortSignal, stopped: () => Error): Promise<T> {
  work.catch(() => {});
  if (signal.aborted) return Promise.reject(stopped());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(stopped());
    signal.addEventListener('abort', abort, { once: true });
    const settle = () => signal.removeEventListener('abort', abort);
    work.then(
      (value) => {
        settle();
        resolve(value);
      },
      (err) => {
        settle();
        reject(err);
      },
    );
  });
}

/** Whether the connection is gone or did not answer in time: nothing more can be sent on it, not even a rollback. */
export function connectionGone(err: unknown): boolean {
  return isConnectionLost(err) || hasCode(err, DEADLINE);
}

const DEADLINE = new Set(['DEADLINE_EXCEEDED']);

/** The error as a run's `latest_error` or log line: the messages down its causes, without drizzle's query text. */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { message, name, code } = e as { message?: unknown; name?: unknown; code?: unknown };
    const text = typeof message === 'string' && message ? message : typeof name === 'string' ? name : String(e);
    if (/^Failed query:/.test(text)) continue;
    parts.push(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? `${text} (SQLSTATE ${code})` : text);
  }
  return (parts.join(': ') || String(err)).slice(0, 2000);
}
