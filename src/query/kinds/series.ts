import { ApiError } from '../../core/errors.js';
import { parseFilterList, type FilterNode } from '../../events/filters.js';
import type { Interval, Period } from './date-range.js';

/** PostHog's labels for a missing breakdown value and for the values past the limit. */
export const BREAKDOWN_NULL = '$$_posthog_breakdown_null_$$';
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';
/** PostHog's default `breakdown_limit`. */
export const BREAKDOWN_LIMIT = 25;

const COUNTING = ['total', 'dau', 'weekly_active', 'monthly_active', 'unique_session'] as const;
const PROPERTY = ['sum', 'avg', 'min', 'max', 'median', 'p90', 'p95', 'p99'] as const;
export type Math = (typeof COUNTING)[number] | (typeof PROPERTY)[number];

/** An `EventsNode` of a request, checked. */
export interface Series {
  event: string | null;
  math: Math;
  mathProperty: string | null;
  filters?: FilterNode;
  raw: Record<string, unknown>;
}

export interface Breakdown {
  property: string;
  type: 'event' | 'person';
  limit: number;
  hideOther: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Property filters given as a list or as PostHog's group object (`{type: AND, values: [...]}`). */
export function parseProperties(raw: unknown, attr: string): FilterNode | undefined {
  if (raw === null || raw === undefined) return undefined;
  return parseFilterList(isObject(raw) ? [raw] : raw, attr);
}

/** Checks one series of a request (`query__series__<i>__...` in errors). */
export function parseSeries(raw: unknown, i: number): Series {
  const attr = `query__series__${i}`;
  if (!isObject(raw)) throw ApiError.validation(attr, 'Each series must be an object.');
  if (raw.kind !== 'EventsNode') {
    throw ApiError.validation(`${attr}__kind`, `Series kind "${String(raw.kind)}" is not supported; use EventsNode.`);
  }
  const math = (raw.math ?? 'total') as string;
  if (!(COUNTING as readonly string[]).includes(math) && !(PROPERTY as readonly string[]).includes(math)) {
    throw ApiError.validation(
      `${attr}__math`,
      `Math "${math}" is not supported; supported: ${[...COUNTING, ...PROPERTY].join(', ')}.`,
      'invalid_choice',
    );
  }
  const mathProperty = typeof raw.math_property === 'string' && raw.math_property ? raw.math_property : null;
  if ((PROPERTY as readonly string[]).includes(math) && !mathProperty) {
    throw ApiError.validation(`${attr}__math_property`, `Math "${math}" needs a math_property.`, 'required');
  }
  return {
    event: typeof raw.event === 'string' ? raw.event : null,
    math: math as Math,
    mathProperty,
    filters: parseProperties(raw.properties, `${attr}__properties`),
    raw,
  };
}

export type Shape = 'time' | 'total' | 'cumulative';

export interface SeriesQuery {
  timezone: string;
  interval: Interval;
  period: Period;
  series: Series;
  filters?: FilterNode;
  breakdown?: Breakdown;
  shape: Shape;
}

/** One answer row: the bucket (local, absent for a total), the breakdown value and the number. */
export interface SeriesRow {
  b?: string;
  bv: string | null;
  value: number;
}
