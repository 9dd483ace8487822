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

/** Django's `parse_datetime` pattern (django.utils.dateparse.datetime_re). */
const DJANGO_DATETIME = new RegExp(
  String.raw`^(\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{1,2})` +
    String.raw`(?::(\d{1,2})(?:[.,](\d{1,6})\d{0,6})?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$`,
);
const DJANGO_DATE = /^(\d{4})-(\d{1,2})-(\d{1,2})$/;

/**
 * A date-time as Django's forms.DateTimeField reads it (what PostHog's filters take): `parse_datetime`'s forms
 * or a bare date for its midnight; no offset means UTC (PostHog's TIME_ZONE). The instant as text PostgreSQL
 * reads to the microsecond, or undefined for what Django refuses (including impossible dates).
 */
export function djangoDateTime(value: string): string | undefined {
  const text = value.trim();
  const m = DJANGO_DATETIME.exec(text) ?? DJANGO_DATE.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((n) => Number(n ?? 0));
  const check = new Date(Date.UTC(year!, month! - 1, day!));
  check.setUTCFullYear(year!);
  const valid =
    year! >= 1 &&
    check.getUTCMonth() === month! - 1 &&
    check.getUTCDate() === day &&
    hour < 24 &&
    minute < 60 &&
    second < 60;
  if (!valid) return undefined;
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  const micros = (m[7] ?? '').padEnd(6, '0');
  const zone = m[8] === undefined || m[8] === 'Z' ? '+00:00' : m[8];
  const offset = /^[+-]\d{2}$/.test(zone) ? `${zone}:00` : zone.replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  if (!/^[+-](0\d|1\d|2[0-3]):[0-5]\d$/.test(offset)) return undefined;
  return `${pad(year!, 4)}-${pad(month!)}-${pad(day!)}T${pad(hour)}:${pad(minute)}:${pad(second)}.${micros}${offset}`;
}
