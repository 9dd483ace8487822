import { ApiError } from '../../core/errors.js';
import { compileExpression, parseExpression, QueryError, type Node } from '../../hogql/index.js';
import { eventsTable, refuseAggregates } from '../../hogql/embedded.js';
import { toText } from '../../hogql/types.js';
import { Timings } from '../timings.js';
import { isoOf, planRange, type RangePlan, resolveRange } from './date-range.js';
import type { Executor } from './execute.js';
import { executeHogQL } from './execute-hogql.js';
import { type Cleaning, PATH_TYPES, type PathType, type PathsPlan, pathsHogQL } from './paths-hogql.js';
import { parseProperties } from './series.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** PostHog's defaults: steps per path and links answered. */
const STEP_LIMIT = 5;
const EDGE_LIMIT = 50;
/** Bounds of ours (PostHog has none): the contract states them. */
const MAX_STEPS = 1000;
const MAX_EDGES = 100_000;
const MAX_WEIGHT = 2_147_483_647;

const F = 'query__pathsFilter';

/** A checked PathsQuery: the plan's filter fields, with the range not yet resolved for a run. */
export type PreparedPaths = Omit<PathsPlan, 'period'> & {
  kind: 'PathsQuery';
  query: Obj;
  range: RangePlan;
};

function strings(raw: unknown, attr: string): string[] {
  if (raw === null || raw === undefined) return [];
  if (!Array.isArray(raw) || !raw.every((v) => typeof v === 'string')) {
    throw ApiError.validation(attr, `${attr.split('__').at(-1)} must be a list of strings.`);
  }
  return raw;
}

/** A whole number of the filter, or undefined when absent or 0 (PostHog reads 0 as unset). */
function count(raw: unknown, attr: string, max: number): number | undefined {
  if (raw === null || raw === undefined || raw === 0) return undefined;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > max) {
    throw ApiError.validation(attr, `A whole number from 0 to ${max} is required.`);
  }
  return raw;
}

const point = (raw: unknown, attr: string): string | undefined => {
  if (raw === null || raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw ApiError.validation(attr, 'A step name (a string) is required.');
  return raw;
};

function parseCleaning(raw: unknown): Cleaning[] {
  if (raw === null || raw === undefined) return [];
  if (!Array.isArray(raw)) throw ApiError.validation(`${F}__localPathCleaningFilters`, 'A list of rules is required.');
  return raw.map((r, i) => {
    const attr = `${F}__localPathCleaningFilters__${i}`;
    if (!isObject(r) || typeof r.regex !== 'string' || !r.regex) throw ApiError.required(`${attr}__regex`);
    if (r.alias !== null && r.alias !== undefined && typeof r.alias !== 'string') {
      throw ApiError.validation(`${attr}__alias`, 'The alias must be a string.');
    }
    return { regex: r.regex, alias: (r.alias as string | null | undefined) ?? '' };
  });
}

async function parseHogQL(text: string): Promise<Node> {
  const attr = `${F}__pathsHogQLExpression`;
  try {
    const node = await parseExpression(text);
    refuseAggregates(node);
    // Whether it compiles does not depend on the project or its zone: refused now rather than when it runs.
    toText(compileExpression(node, eventsTable(), { teamId: 0 }));
    return node;
  } catch (err) {
    if (err instanceof QueryError) throw ApiError.validation(attr, `${err.message}: ${text}`, err.code);
    throw err;
  }
}

/** Checks a PathsQuery as PostHog's PathsQueryRunner would read it: every refusal a 400 naming its field. */
export async function preparePaths(query: Obj): Promise<PreparedPaths> {
  if (!isObject(query.pathsFilter)) throw ApiError.required(F);
  const f = query.pathsFilter;
  if (query.funnelPathsFilter !== null && query.funnelPathsFilter !== undefined) {
    throw ApiError.validation('query__funnelPathsFilter', 'Paths around the steps of a funnel are not supported.');
  }
  if (query.aggregation_group_type_index !== null && query.aggregation_group_type_index !== undefined) {
    throw ApiError.validation('query__aggregation_group_type_index', 'Aggregation by groups is not supported.');
  }
  const types = strings(f.includeEventTypes, `${F}__includeEventTypes`);
  const unknown = types.find((t) => !PATH_TYPES.includes(t as PathType));
  if (unknown !== undefined) throw ApiError.invalidChoice(`${F}__includeEventTypes`, unknown);
  const expression = f.pathsHogQLExpression;
  if (expression !== null && expression !== undefined && typeof expression !== 'string') {
    throw ApiError.validation(`${F}__pathsHogQLExpression`, 'A HogQL expression (a string) is required.');
  }
  const excludeEvents = strings(f.excludeEvents, `${F}__excludeEvents`);
  // The expression names steps only where PostHog would read it (its `_should_query_event('hogql')`).
  const usesHogQL = types.length ? types.includes('hogql') : !excludeEvents.includes('hogql');
  return {
    kind: 'PathsQuery',
    query,
    range: planRange(isObject(query.dateRange) ? query.dateRange : null, 'day'),
    filters: parseProperties(query.properties, 'query__properties'),
    types: types as PathType[],
    hogql: usesHogQL && expression?.trim() ? await parseHogQL(expression) : undefined,
    excludeEvents,
    cleaning: parseCleaning(f.localPathCleaningFilters),
    groupings: strings(f.pathGroupings, `${F}__pathGroupings`),
    startPoint: point(f.startPoint, `${F}__startPoint`),
    endPoint: point(f.endPoint, `${F}__endPoint`),
    stepLimit: count(f.stepLimit, `${F}__stepLimit`, MAX_STEPS) ?? STEP_LIMIT,
    edgeLimit: count(f.edgeLimit, `${F}__edgeLimit`, MAX_EDGES) ?? EDGE_LIMIT,
    minWeight: count(f.minEdgeWeight, `${F}__minEdgeWeight`, MAX_WEIGHT),
    maxWeight: count(f.maxEdgeWeight, `${F}__maxEdgeWeight`, MAX_WEIGHT),
  };
}

interface Link {
  source: string;
  target: string;
  value: number;
  seconds: number;
}

/**
 * PostHog's `validate_results`: only the links reachable from a first step, so that a link whose way back
 * to the start was cut by the edge limit is not drawn hanging.
 */
function reachable(links: Link[]): Link[] {
  const next = new Map<string, string[]>();
  const stack: string[] = [];
  for (const l of links) {
    next.set(l.source, [...(next.get(l.source) ?? []), l.target]);
    if (l.source.startsWith('1_')) stack.push(l.source);
  }
  const seen = new Set<string>();
  while (stack.length) {
    const node = stack.pop()!;
    seen.add(node);
    for (const target of next.get(node) ?? []) if (!seen.has(target)) stack.push(target);
  }
  return links.filter((l) => seen.has(l.source));
}

/** Links by weight, then source and target in byte order (as ClickHouse orders text). */
const byWeight = (a: Link, b: Link) =>
  Number(b.value) - Number(a.value) ||
  Buffer.compare(Buffer.from(a.source), Buffer.from(b.source)) ||
  Buffer.compare(Buffer.from(a.target), Buffer.from(b.target));

/** Runs a prepared PathsQuery and answers PostHog's links (`source`, `target`, `value`, time in ms). */
export async function runPaths(ex: Executor, teamId: number, p: PreparedPaths) {
  const timings = new Timings();
  const range = await timings.measure('date_range', () => resolveRange(ex, teamId, p.range));
  const tz = range.timezone;
  const text = pathsHogQL({ ...p, period: range.current });
  const answer = await timings.measure('execute', () => executeHogQL<Link>(ex, teamId, tz, text));
  const top = answer.rows.sort(byWeight).slice(0, p.edgeLimit);
  const results = reachable(top).map((r) => ({
    source: r.source,
    target: r.target,
    value: Number(r.value),
    average_conversion_time: Number(r.seconds) * 1000,
  }));
  return {
    results,
    hogql: answer.hogql,
    resolved_date_range: { date_from: isoOf(range.current.from, tz), date_to: isoOf(range.current.to, tz) },
    timings: timings.list(),
  };
}
