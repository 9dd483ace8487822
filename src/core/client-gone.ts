// The request in hand, seen from code far below its handler: its answer, so that work nobody will read stops
// when its client leaves (a query that runs to its timeout after its client closed the connection would hold
// its organization's slot and a database backend), and the organization it acts for, so that work shared by
// every tenant (the HogQL parser's thread) is taken in turns between organizations.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';

const answering = new AsyncLocalStorage<{ res: ServerResponse; organization?: string }>();

/** Runs `fn` (the rest of a request) with `res` as the answer in hand. */
export function answeringWith<T>(res: ServerResponse, fn: () => T): T {
  return answering.run({ res }, fn);
}

/** Records the organization the request in hand acts for (once its caller is known to belong to it). */
export function actingFor(organizationId: string): void {
  const store = answering.getStore();
  if (store) store.organization = organizationId;
}

/** The organization the request in hand acts for; undefined outside a request or before it is known. */
export const actingOrganization = (): string | undefined => answering.getStore()?.organization;

/** The client of the request in hand left before its answer was written. */
export class ClientGone extends Error {
  constructor() {
    super('the client closed the connection before its answer');
  }
}

const left = (res: ServerResponse) => res.destroyed && !res.writableFinished;

/** The client of the request in hand has already left (false outside a request). */
export function clientLeft(): boolean {
  const res = answering.getStore()?.res;
  return res !== undefined && left(res);
}

/**
 * Calls `onGone` once if the client of the request in hand closes its connection before the answer is written
 * (at once if it already has); answers the function that stops watching. Outside a request, nothing is watched.
 */
export function whenClientGone(onGone: () => void): () => void {
  const res = answering.getStore()?.res;
  if (!res) return () => {};
  if (left(res)) {
    onGone();
    return () => {};
  }
  const listener = () => {
    if (!res.writableFinished) onGone();
  };
  res.once('close', listener);
  return () => res.off('close', listener);
}
