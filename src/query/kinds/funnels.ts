import { ApiError } from '../../core/errors.js';
import type { FilterNode } from '../../events/filters.js';
import { Timings } from '../timings.js';
import {
  dayOf,
  INTERVALS,
  type Interval,
  isoOf,
  labelOf,
  localOf,
  planRange,
  type RangePlan,
  resolveRange,
} from './date-range.js';
import type { Executor } from './execute.js';
import { executeHogQL } from './execute-hogql.js';
import {
  type Exclusion,
  type FunnelBreakdown,
  type FunnelPlan,
  funnelStepsHogQL,
  funnelTrendsHogQL,
  type OrderType,
} from './funnel-hogql.js';
import { BREAKDOWN_LIMIT, parseProperties, parseSeries, type Series } from './series.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const ORDERS: OrderType[] = ['ordered', 'strict', 'unordered'];
/** PostHog's DATERANGE_MAP: a conversion window unit in seconds (a month is 31 days). */
const UNIT_SECONDS: Record<string, number> = {
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  week: 604_800,
  month: 2_678_400,
};
/** The most steps a funnel may have (PostHog's limit). */
const MAX_STEPS = 30;

export interface PreparedFunnels {
  kind: 'FunnelsQuery';
  query: Obj;
  steps: Series[];
  order: OrderType;
  viz: 'steps' | 'trends';
  windowSeconds: number;
  exclusions: Exclusion[];
  interval: Interval;
  range: RangePlan;
  filters?: FilterNode;
  breakdown?: FunnelBreakdown & { asList: boolean };
  fromStep: number;
  toStep: number;
}

const A = 'query__funnelsFilter';

function parseExclusions(raw: unknown, steps: Series[]): Exclusion[] {
  if (raw === null || raw === undefined) return [];
  if (!Array.isArray(raw)) throw ApiError.validation(`${A}__exclusions`, 'exclusions must be a list.');
  return raw.map((x, i) => {
    const attr = `${A}__exclusions__${i}`;
    if (!isObject(x) || (x.kind !== undefined && x.kind !== 'EventsNode')) {
      throw ApiError.validation(attr, 'An exclusion must be an EventsNode with funnelFromStep and funnelToStep.');
    }
    const { funnelFromStep: from, funnelToStep: to } = x;
    if (typeof from !== 'number' || !Number.isInteger(from)) throw ApiError.required(`${attr}__funnelFromStep`);
    if (typeof to !== 'number' || !Number.isInteger(to)) throw ApiError.required(`${attr}__funnelToStep`);
    // PostHog's own refusals, in its words.
    if (from >= to) {
      throw ApiError.validation(attr, 'Exclusion event range is invalid. End of range should be greater than start.');
    }
    if (from < 0 || from >= steps.length - 1) {
      throw ApiError.validation(
        attr,
        'Exclusion event range is invalid. Start of range is greater than number of steps.',
      );
    }
    if (to > steps.length - 1) {
      throw ApiError.validation(
        attr,
        'Exclusion event range is invalid. End of range is greater than number of steps.',
      );
    }
    const event = typeof x.event === 'string' ? x.event : null;
    const filters = parseProperties(x.properties, `${attr}__properties`);
    if (steps.slice(from, to + 1).some((s) => s.event === event && !s.filters && !filters)) {
      throw ApiError.validation(attr, "Exclusion steps cannot contain an event that's part of funnel steps.");
    }
    return { event, filters, from, to };
  });
}

function parseBreakdown(raw: unknown, attribution: unknown): PreparedFunnels['breakdown'] {
  if (raw === null || raw === undefined) return undefined;
  if (!isObject(raw)) throw ApiError.validation('query__breakdownFilter', 'breakdownFilter must be an object.');
  if (Array.isArray(raw.breakdowns) && raw.breakdowns.length) {
    throw ApiError.validation('query__breakdownFilter__breakdowns', 'Multiple breakdowns are not supported.');
  }
  const asList = Array.isArray(raw.breakdown);
  const property = asList ? (raw.breakdown as unknown[])[0] : raw.breakdown;
  if (property === null || property === undefined || property === '') return undefined;
  if (typeof property !== 'string' || (asList && (raw.breakdown as unknown[]).length > 1)) {
    throw ApiError.validation('query__breakdownFilter__breakdown', 'A breakdown must name one property.');
  }
  const type = raw.breakdown_type ?? 'event';
  if (type !== 'event' && type !== 'person') {
    throw ApiError.validation(
      'query__breakdownFilter__breakdown_type',
      `Breakdown type "${String(type)}" is not supported; supported: event, person.`,
      'invalid_choice',
    );
  }
  const touch = attribution ?? 'first_touch';
  if (touch !== 'first_touch' && touch !== 'last_touch') {
    throw ApiError.validation(
      `${A}__breakdownAttributionType`,
      `Breakdown attribution "${String(touch)}" is not supported; supported: first_touch, last_touch.`,
      'invalid_choice',
    );
  }
  const limit =
    typeof raw.breakdown_limit === 'number' && raw.breakdown_limit > 0 ? raw.breakdown_limit : BREAKDOWN_LIMIT;
  return { property, type, limit, attribution: touch, asList };
}

function stepIndex(raw: unknown, attr: string, min: number, max: number, fallback: number): number {
  if (raw === null || raw === undefined) return fallback;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < min || raw > max) {
    throw ApiError.validation(
      attr,
      `${attr.split('__').at(-1)} is out of bounds. It must be between ${min} and ${max}.`,
    );
  }
  return raw;
}

/** Checks a FunnelsQuery as PostHog's FunnelsQueryRunner would: every refusal a 400 naming its field. */
export function prepareFunnels(query: Obj): PreparedFunnels {
  if (!Array.isArray(query.series)) throw ApiError.required('query__series');
  if (query.series.length < 2) throw ApiError.validation('query__series', 'A funnel needs at least two steps.');
  if (query.series.length > MAX_STEPS) {
    throw ApiError.validation('query__series', `A funnel has at most ${MAX_STEPS} steps.`);
  }
  const steps = query.series.map((s, i) => parseSeries(s, i));
  const f = isObject(query.funnelsFilter) ? query.funnelsFilter : {};
  const order = (f.funnelOrderType ?? 'ordered') as OrderType;
  if (!ORDERS.includes(order)) throw ApiError.invalidChoice(`${A}__funnelOrderType`, order);
  const viz = f.funnelVizType ?? 'steps';
  if (viz !== 'steps' && viz !== 'trends') {
    throw ApiError.validation(
      `${A}__funnelVizType`,
      `funnelVizType "${String(viz)}" is not supported; supported: steps, trends.`,
      'invalid_choice',
    );
  }
  const unit = (f.funnelWindowIntervalUnit ?? 'day') as string;
  if (!UNIT_SECONDS[unit]) throw ApiError.invalidChoice(`${A}__funnelWindowIntervalUnit`, unit);
  const amount = f.funnelWindowInterval ?? 14;
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1) {
    throw ApiError.validation(`${A}__funnelWindowInterval`, 'The conversion window must be a positive whole number.');
  }
  const exclusions = parseExclusions(f.exclusions, steps);
  if (order === 'unordered' && exclusions.some((x) => x.from !== 0 || x.to !== steps.length - 1)) {
    throw ApiError.validation(`${A}__exclusions`, 'Partial Exclusions not allowed in unordered funnels');
  }
  const interval = (query.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw ApiError.invalidChoice('query__interval', interval);
  const last = steps.length - 1;
  const fromStep = stepIndex(f.funnelFromStep, `${A}__funnelFromStep`, 0, last - 1, 0);
  const toStep = stepIndex(f.funnelToStep, `${A}__funnelToStep`, 1, last, last);
  if (fromStep >= toStep) {
    throw ApiError.validation(
      `${A}__funnelToStep`,
      'Funnel step range is invalid. funnelToStep should be greater than funnelFromStep.',
    );
  }
  return {
    kind: 'FunnelsQuery',
    query,
    steps,
    order,
    viz,
    windowSeconds: amount * UNIT_SECONDS[unit]!,
    exclusions,
    interval,
    range: planRange(isObject(query.dateRange) ? query.dateRange : null, interval),
    filters: parseProperties(query.properties, 'query__properties'),
    breakdown: parseBreakdown(query.breakdownFilter, f.breakdownAttributionType),
    fromStep,
    toStep,
  };
}

interface TrendRow {
  b: string;
  breakdown_value: string | null;
  entered: number;
  converted: number;
}

interface StepRow {
  breakdown_value: string | null;
  [column: string]: unknown;
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** One funnel's steps in PostHog's shape (`FunnelUDF._format_single_funnel` and `_serialize_step`). */
function stepsOf(p: PreparedFunnels, row: StepRow) {
  const value = row.breakdown_value;
  const bv = p.breakdown ? (p.breakdown.asList ? [value] : value) : undefined;
  return p.steps.map((s, k) => {
    const unordered = p.order === 'unordered';
    return {
      action_id: unordered ? null : s.event,
      name: unordered ? `Completed ${k + 1} step${k ? 's' : ''}` : (s.event ?? 'All events'),
      custom_name: unordered ? null : (s.raw.custom_name ?? null),
      order: k,
      people: [],
      count: Number(row[`c${k}`]),
      type: 'events',
      average_conversion_time: k ? num(row[`avg${k}`]) : null,
      median_conversion_time: k ? num(row[`med${k}`]) : null,
      // PostHog's HogQL funnels list a step's persons through an actors query; no persons URL is served here.
      converted_people_url: null,
      dropped_people_url: null,
      ...(p.breakdown ? { breakdown: bv, breakdown_value: bv } : {}),
    };
  });
}

/** Breakdown funnels as PostHog orders them: by the last step's count, then the one before, and so on. */
function byCounts(n: number) {
  return (a: StepRow, b: StepRow) => {
    for (let k = n - 1; k >= 0; k--) {
      const d = Number(b[`c${k}`]) - Number(a[`c${k}`]);
      if (d) return d;
    }
    return String(a.breakdown_value).localeCompare(String(b.breakdown_value));
  };
}

/**
 * Runs a prepared FunnelsQuery: each person's path through the steps as PostHog's funnel finds it, then
 * per step the persons who reached it and the mean and median seconds from the step before; or, for
 * `funnelVizType: trends`, the conversion rate from `funnelFromStep` to `funnelToStep` per period of entry.
 */
export async function runFunnels(ex: Executor, teamId: number, p: PreparedFunnels) {
  const timings = new Timings();
  const range = await timings.measure('date_range', () => resolveRange(ex, teamId, p.range));
  const plan: FunnelPlan = {
    period: range.current,
    steps: p.steps,
    order: p.order,
    windowSeconds: p.windowSeconds,
    exclusions: p.exclusions,
    filters: p.filters,
    breakdown: p.breakdown,
  };
  let results: unknown[];
  let hogql: string;
  if (p.viz === 'trends') {
    const text = funnelTrendsHogQL(plan, p.interval, p.fromStep, p.toStep);
    const answer = await timings.measure('execute', () => executeHogQL<TrendRow>(ex, teamId, range.timezone, text));
    hogql = answer.hogql;
    results = timings.measure('assemble', () => trendsOf(p, range.current.buckets, answer.rows));
  } else {
    const text = funnelStepsHogQL(plan);
    const answer = await timings.measure('execute', () => executeHogQL<StepRow>(ex, teamId, range.timezone, text));
    hogql = answer.hogql;
    results = timings.measure('assemble', () => {
      const entered = answer.rows.filter((r) => Number(r.c0) > 0);
      if (!p.breakdown) return entered.length ? stepsOf(p, entered[0]!) : [];
      return entered.sort(byCounts(p.steps.length)).map((r) => stepsOf(p, r));
    });
  }
  return {
    results,
    hogql,
    isUdf: false,
    resolved_date_range: {
      date_from: isoOf(range.current.from, range.timezone),
      date_to: isoOf(range.current.to, range.timezone),
    },
    timings: timings.list(),
  };
}

/** PostHog's funnel trends: per breakdown value, the conversion rate (percent, 2 decimals) per period. */
function trendsOf(p: PreparedFunnels, buckets: string[], rows: TrendRow[]) {
  const groups = new Map<string | null, Map<string, { entered: number; converted: number }>>();
  for (const r of rows) {
    let g = groups.get(r.breakdown_value);
    if (!g) groups.set(r.breakdown_value, (g = new Map()));
    g.set(localOf(r.b), { entered: Number(r.entered), converted: Number(r.converted) });
  }
  if (!p.breakdown && !groups.size) groups.set(null, new Map());
  const one = (values: Map<string, { entered: number; converted: number }>) => {
    const data = buckets.map((b) => {
      const v = values.get(b);
      return v && v.entered > 0 ? Math.round((v.converted / v.entered) * 10_000) / 100 : 0;
    });
    return {
      count: buckets.length,
      data,
      days: buckets.map((b) => dayOf(b, p.interval === 'hour' ? 'hour' : 'day')),
      labels: buckets.map((b) => labelOf(b, p.interval)),
    };
  };
  if (!p.breakdown) return [one(groups.get(null) ?? new Map())];
  const total = (g: Map<string, { entered: number }>) => [...g.values()].reduce((a, v) => a + v.entered, 0);
  return [...groups.entries()]
    .sort(([a, ga], [b, gb]) => total(gb) - total(ga) || String(b).localeCompare(String(a)))
    .slice(0, p.breakdown.limit)
    .sort(([a], [b]) => String(a).localeCompare(String(b)))
    .map(([bv, g]) => ({ ...one(g), breakdown_value: p.breakdown!.asList ? [bv] : bv }));
}
