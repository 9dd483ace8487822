import type { FastifyRequest } from 'fastify';
import type { Page } from '../core/paging.js';

export interface Paginated<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** The absolute URL of this request, from SITE_URL when set, else from the request itself. */
export function requestUrl(req: FastifyRequest): URL {
  const base = req.server.config.siteUrl ?? `${req.protocol}://${req.host}`;
  return new URL(req.url, base);
}

export function paginated<T>(req: FastifyRequest, page: Page, count: number, results: T[]): Paginated<T> {
  const url = requestUrl(req);
  let next: string | null = null;
  if (page.offset + page.limit < count) {
    const u = new URL(url);
    u.searchParams.set('limit', String(page.limit));
    u.searchParams.set('offset', String(page.offset + page.limit));
    next = u.toString();
  }
  let previous: string | null = null;
  if (page.offset > 0) {
    const u = new URL(url);
    u.searchParams.set('limit', String(page.limit));
    if (page.offset - page.limit <= 0) u.searchParams.delete('offset');
    else u.searchParams.set('offset', String(page.offset - page.limit));
    previous = u.toString();
  }
  return { count, next, previous, results };
}
