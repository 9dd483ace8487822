import type { FastifyRequest } from 'fastify';
import { clampLimit } from '../core/paging.js';
import { getUsers, type UserRow } from '../users/queries.js';
import { requestUrl } from './pagination.js';

/**
 * PostHog's activity log page (`results`, `next`, `previous`, `total_count`, paged by `page` and `limit`),
 * shared by the plugin and project logs, with the users the entries name loaded in one query.
 */
export async function activityLogPage<Row extends { user_id: number | null }, Entry>(
  req: FastifyRequest,
  query: { limit?: number; page?: number },
  load: (limit: number, page: number) => Promise<{ total: number; rows: Row[] }>,
  serialize: (row: Row, user: UserRow | undefined) => Entry,
) {
  const limit = clampLimit(query.limit, 10);
  // Pages past any real log are empty; the clamp keeps the offset a number PostgreSQL accepts.
  const page = Math.min(query.page ?? 1, 10_000_000);
  const { total, rows } = await load(limit, page);
  const users = await getUsers(
    req.server.db,
    rows.flatMap((r) => (r.user_id === null ? [] : [r.user_id])),
  );
  const pageUrl = (n: number) => {
    const u = requestUrl(req);
    u.searchParams.set('page', String(n));
    u.searchParams.set('limit', String(limit));
    return u.toString();
  };
  return {
    results: rows.map((r) => serialize(r, r.user_id === null ? undefined : users.get(r.user_id))),
    next: page * limit < total ? pageUrl(page + 1) : null,
    previous: page > 1 ? pageUrl(page - 1) : null,
    total_count: total,
  };
}
