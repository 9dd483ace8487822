const RELATIVE = /^-(\d+)([hdwmy])$/;
const HOURS: Record<string, number> = { h: 1, d: 24, w: 24 * 7, m: 24 * 30, y: 24 * 365 };

/** An ISO date or PostHog's relative form (`-7d`) as an ISO instant; a date without an offset is UTC. */
export function dateValue(value: unknown, now = new Date()): string | undefined {
  if (typeof value !== 'string') return undefined;
  const rel = RELATIVE.exec(value.trim());
  if (rel) return inRange(new Date(now.getTime() - Number(rel[1]) * HOURS[rel[2]!]! * 3_600_000));
  const text = /^\d{4}-\d{2}-\d{2}$/.test(value)
    ? `${value}T00:00:00Z`
    : /[zZ]|[+-]\d{2}:?\d{2}$/.test(value)
      ? value
      : `${value}Z`;
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(text)) return undefined;
  return inRange(new Date(text));
}

/** Years 1 to 9999, as a date is written in ISO 8601 (and as PostgreSQL and Python hold them). */
function inRange(d: Date): string | undefined {
  const year = d.getUTCFullYear();
  return Number.isNaN(d.getTime()) || year < 1 || year > 9999 ? undefined : d.toISOString();
}
