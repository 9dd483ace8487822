export const DEFAULT_LIMIT = 100;
/** The most rows one page answers: a larger `limit` is clamped, not refused (the cap is in the contract). */
export const MAX_LIMIT = 1000;

export interface Page {
  limit: number;
  offset: number;
}

/** DRF's LimitOffsetPagination: a missing or non-positive limit falls back to the default; we clamp at MAX_LIMIT. */
export function clampLimit(limit: number | undefined, fallback = DEFAULT_LIMIT): number {
  return limit && limit > 0 ? Math.min(limit, MAX_LIMIT) : fallback;
}

export function pageOf(query: { limit?: number; offset?: number } | undefined, fallback = DEFAULT_LIMIT): Page {
  // Past 2^53 a JavaScript number is no longer an exact integer, and PostgreSQL's OFFSET is a bigint.
  const offset = query?.offset && query.offset > 0 ? Math.min(query.offset, Number.MAX_SAFE_INTEGER) : 0;
  return { limit: clampLimit(query?.limit, fallback), offset };
}
