import type { FastifyRequest } from 'fastify';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface Page {
  limit: number;
  offset: number;
}

export interface Paginated<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** DRF's LimitOffsetPagination: a non-positive limit falls back to the default; we clamp at 1000. */
export function pageOf(query: { limit?: number; offset?: number } | undefined): Page {
  const limit = query?.limit && query.limit > 0 ? Math.min(query.limit, MAX_LIMIT) : DEFAULT_LIMIT;
  // Past 2^53 a JavaScript number is no longer an exact integer, and PostgreSQL's OFFSET is a bigint.
  const offset = query?.offset && query.offset > 0 ? Math.min(query.offset, Number.MAX_SAFE_INTEGER) : 0;
  return { limit, offset };
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
