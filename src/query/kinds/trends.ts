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
  type Period,
  type RangePlan,
  resolveRange,
} from './date-range.js';
import type { Executor } from './execute.js';
import { evaluateFormula, type Formula, parseFormula } from './formula.js';
import {
  BREAKDOWN_LIMIT,
  BREAKDOWN_NULL,
  BREAKDOWN_OTHER,
  type Breakdown,
  parseProperties,
  parseSeries,
  type Series,
  type SeriesRow,
  type Shape,
} from './series.js';
import { seriesHogQL } from './series-hogql.js';
import { executeHogQL } from './execute-hogql.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** PostHog's displays that answer one number per series for the whole range (`aggregated_value`). */
const TOTAL_VALUE = new Set(['BoldNumber', 'ActionsPie', 'ActionsTable', 'ActionsBarValue', 'WorldMap']);
const TIME_SERIES = new Set([
  'ActionsLineGraph',
  'ActionsBar',
  'ActionsAreaGraph',
  'ActionsLineGraphCumulative',
  'ActionsStackedBar',
]);
const CUMULATIVE = 'ActionsLineGraphCumulative';

/** A TrendsQuery checked and ready to run for one project. */
export interface PreparedTrends {
  kind: 'TrendsQuery';
  query: Obj;
  series: Series[];
  interval: Interval;
  range: RangePlan;
  filters?: FilterNode;
  breakdown?: Breakdown;
  display: string;
  formulas: { formula: Formula; text: string; customName: string | null }[];
}

function parseBreakdown(raw: unknown): Breakdown | undefined {
  if (raw === null || raw === undefined) return undefined;
  if (!isObject(raw)) throw ApiError.validation('query__breakdownFilter', 'breakdownFilter must be an object.');
  if (Array.isArray(raw.breakdowns) && raw.breakdowns.length) {
    throw ApiError.validation('query__breakdownFilter__breakdowns', 'Multiple breakdowns are not supported.');
  }
  let property = raw.breakdown;
  if (Array.isArray(property)) property = property[0];
  if (property === null || property === undefined || property === '') return undefined;
  if (typeof property !== 'string') {
    throw ApiError.validation('query__breakdownFilter__breakdown', 'A breakdown must name a property.');
  }
  const type = raw.breakdown_type ?? 'event';
  if (type !== 'event' && type !== 'person') {
    throw ApiError.validation(
      'query__breakdownFilter__breakdown_type',
      `Breakdown type "${String(type)}" is not supported; supported: event, person.`,
      'invalid_choice',
    );
  }
  const limit = typeof raw.breakdown_limit === 'number' ? raw.breakdown_limit : BREAKDOWN_LIMIT;
  return { property, type, limit, hideOther: raw.breakdown_hide_other_aggregation === true };
}

/** Checks a TrendsQuery as PostHog's TrendsQueryRunner would: every refusal a 400 naming its field. */
export function prepareTrends(query: Obj): PreparedTrends {
  if (!Array.isArray(query.series)) throw ApiError.required('query__series');
  if (!query.series.length) throw ApiError.validation('query__series', 'A TrendsQuery needs at least one series.');
  const series = query.series.map((s, i) => parseSeries(s, i));
  const interval = (query.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw ApiError.invalidChoice('query__interval', interval);
  const trendsFilter = isObject(query.trendsFilter) ? query.trendsFilter : {};
  const display = typeof trendsFilter.display === 'string' ? trendsFilter.display : 'ActionsLineGraph';
  if (!TOTAL_VALUE.has(display) && !TIME_SERIES.has(display)) {
    throw ApiError.invalidChoice('query__trendsFilter__display', display);
  }
  const compare = isObject(query.compareFilter) ? query.compareFilter : null;
  // A total-value display reads the range by days, whatever the interval (PostHog's query_date_range).
  const range = planRange(
    isObject(query.dateRange) ? query.dateRange : null,
    TOTAL_VALUE.has(display) ? 'day' : interval,
    compare as { compare?: boolean; compare_to?: string } | null,
  );
  const formulaTexts: { text: string; customName: string | null }[] = Array.isArray(trendsFilter.formulaNodes)
    ? (trendsFilter.formulaNodes as Obj[]).map((n) => ({
        text: String(n.formula),
        customName: typeof n.custom_name === 'string' ? n.custom_name : null,
      }))
    : Array.isArray(trendsFilter.formulas)
      ? (trendsFilter.formulas as string[]).map((text) => ({ text, customName: null }))
      : typeof trendsFilter.formula === 'string' && trendsFilter.formula.trim()
        ? [{ text: trendsFilter.formula, customName: null }]
        : [];
  return {
    kind: 'TrendsQuery',
    query,
    series,
    interval: TOTAL_VALUE.has(display) ? 'day' : interval,
    range,
    filters: parseProperties(query.properties, 'query__properties'),
    breakdown: parseBreakdown(query.breakdownFilter),
    display,
    formulas: formulaTexts.map((f) => ({ ...f, formula: parseFormula(f.text, series.length) })),
  };
}

/** A row of a series' HogQL: its bucket as the compiler writes a date or date-time, its breakdown value, its number. */
interface HogQLRow {
  b?: string;
  breakdown_value?: string;
  value: number | string | null;
}

const seriesRow = (r: HogQLRow): SeriesRow => ({
  b: r.b === undefined ? undefined : localOf(r.b),
  bv: r.breakdown_value ?? null,
  value: Number(r.value ?? 0),
});

/** A series result as PostHog's TrendsQueryRunner builds it (`build_series_response`). */
type Item = Obj & { data: number[] | null; count: number; breakdown_value?: string; aggregated_value?: number };

const rankOf = (bv: unknown) => (bv === BREAKDOWN_OTHER ? 2 : bv === BREAKDOWN_NULL ? 1 : 0);

/** PostHog's order of breakdown series: values by their total, largest first; then none; then other. */
function byBreakdown(a: Item, b: Item): number {
  const r = rankOf(a.breakdown_value) - rankOf(b.breakdown_value);
  if (r) return r;
  const total = (x: Item) => x.aggregated_value ?? x.count;
  return total(b) - total(a) || String(a.breakdown_value).localeCompare(String(b.breakdown_value));
}

function filterOf(p: PreparedTrends, period: Period, timezone: string): Obj {
  const q = p.query;
  const filter: Obj = {
    insight: 'TRENDS',
    properties: q.properties,
    filter_test_accounts: q.filterTestAccounts,
    date_to: isoOf(period.to, timezone),
    date_from: isoOf(period.from, timezone),
    entity_type: 'events',
    interval: q.interval,
    ...(isObject(q.trendsFilter) ? q.trendsFilter : {}),
    ...(isObject(q.breakdownFilter) ? q.breakdownFilter : {}),
  };
  return Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== null && v !== undefined));
}

function itemsOf(
  p: PreparedTrends,
  index: number,
  period: Period,
  timezone: string,
  rows: SeriesRow[],
  compareLabel: 'current' | 'previous' | undefined,
): Item[] {
  const s = p.series[index]!;
  const name = s.event ?? 'All events';
  const action = {
    days: period.buckets.map((b) => isoOf(b, timezone)),
    id: s.event,
    type: 'events',
    order: index,
    name,
    custom_name: s.raw.custom_name ?? null,
    math: s.raw.math ?? null,
    math_property: s.raw.math_property ?? null,
    math_hogql: s.raw.math_hogql ?? null,
    math_group_type_index: s.raw.math_group_type_index ?? null,
    properties: {},
  };
  const filter = filterOf(p, period, timezone);
  const groups = new Map<string | null, Map<string | undefined, number>>();
  for (const r of rows) {
    let g = groups.get(r.bv);
    if (!g) groups.set(r.bv, (g = new Map()));
    g.set(r.b, Number(r.value));
  }
  if (!p.breakdown && !groups.size) groups.set(null, new Map());
  const items: Item[] = [];
  for (const [bv, values] of groups) {
    let item: Item;
    if (TOTAL_VALUE.has(p.display)) {
      item = {
        data: [],
        days: [],
        count: 0,
        aggregated_value: values.get(undefined) ?? [...values.values()][0] ?? 0,
        label: name,
        filter,
        action,
      };
    } else {
      let data = period.buckets.map((b) => values.get(b) ?? 0);
      if (p.display === CUMULATIVE) {
        let run = 0;
        data = data.map((v) => (run += v));
      }
      item = {
        data,
        labels: period.buckets.map((b) => labelOf(b, p.interval)),
        days: period.buckets.map((b) => dayOf(b, p.interval)),
        count: p.display === CUMULATIVE ? (data.at(-1) ?? 0) : data.reduce((a, v) => a + v, 0),
        label: name,
        filter,
        action,
      };
    }
    if (compareLabel) Object.assign(item, { compare: true, compare_label: compareLabel });
    if (p.breakdown && bv !== null) {
      item.label = p.series.length > 1 ? `${name} - ${bv}` : bv;
      item.breakdown_value = bv;
    }
    items.push(item);
  }
  return p.breakdown ? items.sort(byBreakdown) : items;
}

/** PostHog's `apply_formula`: one result per breakdown value (or per period) computed from the series'. */
function applyFormula(p: PreparedTrends, f: PreparedTrends['formulas'][number], perSeries: Item[][]): Item[] {
  const total = TOTAL_VALUE.has(p.display);
  const compute = (group: (Item | undefined)[], like: Item): Item => {
    const base: Item = structuredClone(group[0] ?? like);
    base.label = f.customName ?? `Formula (${f.text})`;
    base.action = null;
    if (total) {
      const values = group.map((g) => [g?.aggregated_value ?? 0]);
      base.aggregated_value = evaluateFormula(f.formula, values).reduce((a, v) => a + v, 0);
      base.data = null;
      base.count = 0;
    } else {
      const width = like.data?.length ?? 0;
      const data = evaluateFormula(
        f.formula,
        group.map((g) => g?.data ?? new Array<number>(width).fill(0)),
      );
      base.data = data;
      base.count = data.reduce((a, v) => a + v, 0);
      if (!group[0]) base.breakdown_value = like.breakdown_value;
    }
    return base;
  };
  if (!p.breakdown)
    return [
      compute(
        perSeries.map((items) => items[0]),
        perSeries.find((s) => s[0])![0]!,
      ),
    ];
  const values = new Set(perSeries.flatMap((items) => items.map((i) => i.breakdown_value)));
  const out: Item[] = [];
  for (const bv of values) {
    const group = perSeries.map((items) => items.find((i) => i.breakdown_value === bv));
    const like = group.find(Boolean)!;
    const item = compute(group, like);
    item.breakdown_value = bv;
    out.push(item);
  }
  return out.sort(byBreakdown);
}

/**
 * Runs a prepared TrendsQuery: the date range in the project's timezone, then one HogQL query per series
 * and period (through the one compiler, as any Query API query), assembled into PostHog's series results
 * (zero-filled buckets, breakdown order and "other", compare periods, formulas, cumulative and total-value
 * displays).
 */
export async function runTrends(ex: Executor, teamId: number, p: PreparedTrends) {
  const timings = new Timings();
  const range = await timings.measure('date_range', () => resolveRange(ex, teamId, p.range));
  const shape: Shape = TOTAL_VALUE.has(p.display) ? 'total' : p.display === CUMULATIVE ? 'cumulative' : 'time';
  const periods: { period: Period; label?: 'current' | 'previous' }[] = range.previous
    ? [
        { period: range.current, label: 'current' },
        { period: range.previous, label: 'previous' },
      ]
    : [{ period: range.current }];
  const answers = await timings.measure('execute', () =>
    Promise.all(
      periods.map(({ period }) =>
        Promise.all(
          p.series.map(async (series) => {
            const query = seriesHogQL({
              timezone: range.timezone,
              interval: p.interval,
              period,
              series,
              filters: p.filters,
              breakdown: p.breakdown,
              shape,
            });
            const { rows, hogql } = await executeHogQL<HogQLRow>(ex, teamId, range.timezone, query);
            return { rows: rows.map(seriesRow), hogql };
          }),
        ),
      ),
    ),
  );
  let results: Item[] = timings.measure('assemble', () => {
    const perPeriod = periods.map(({ period, label }, pi) =>
      p.series.map((_, si) => itemsOf(p, si, period, range.timezone, answers[pi]![si]!.rows, label)),
    );
    if (p.formulas.length) {
      return perPeriod.flatMap((perSeries) => p.formulas.flatMap((f) => applyFormula(p, f, perSeries)));
    }
    return perPeriod.flatMap((perSeries) => perSeries.flat());
  });
  const hasMore = results.some((r) => r.breakdown_value === BREAKDOWN_OTHER);
  if (p.breakdown?.hideOther) results = results.filter((r) => r.breakdown_value !== BREAKDOWN_OTHER);
  return {
    results,
    hasMore,
    // As PostHog's runner: its series' queries as one UNION ALL.
    hogql: answers
      .flat()
      .map((a) => a.hogql)
      .join('\nUNION ALL\n'),
    resolved_date_range: {
      date_from: isoOf(range.current.from, range.timezone),
      date_to: isoOf(range.current.to, range.timezone),
    },
    timings: timings.list(),
  };
}
