// A hog function's `filters` (events, properties, filter_test_accounts) compiled to HogQL and then to bytecode,
// following PostHog's posthog/cdp/filters.py (hog_function_filters_to_expr, compile_filters_bytecode), and run
// on an event's filter globals as its plugin server does.
import hogvm from '@posthog/hogvm';
import { type Bytecode, compileAst } from './compile.js';
import { HogCompileError } from './errors.js';
import type { AstNode } from './parse.js';
import { HOG_EXTERNAL } from './external.js';
import { type PropertyContext, type PropertyFilter, propertyToAst } from './properties.js';
import { HOG_LIMITS } from './run.js';

export interface EventFilter {
  id?: string | null;
  type?: string;
  name?: string;
  order?: number;
  properties?: PropertyFilter[];
  [other: string]: unknown;
}

export interface HogFunctionFilters {
  events?: EventFilter[];
  actions?: EventFilter[];
  properties?: PropertyFilter[];
  filter_test_accounts?: boolean;
  [other: string]: unknown;
}

export interface FilterContext extends PropertyContext {
  /** The project's test account filters, applied when `filter_test_accounts` is on. */
  testAccountFilters?: PropertyFilter[];
}

/** PostHog's answer: the filters with `bytecode`, or `bytecode: null` and `bytecode_error`. */
export type CompiledFilters = HogFunctionFilters & { bytecode: Bytecode | null; bytecode_error?: string };

const n = (kind: string, fields: Record<string, unknown>): AstNode => ({ node: kind, ...fields });
const TRUE = n('Constant', { value: true });

/** Events whose properties hold nested JSON (activity logs): a `detail.name` key reads `properties.detail.name`. */
const NESTED_PROPERTY_EVENTS = new Set(['$activity_log_entry_created']);

function resolveNestedKeys(ast: AstNode): AstNode {
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = visit(v);
    const chain = out.chain as unknown[] | undefined;
    if (out.node === 'Field' && chain?.[0] === 'properties') {
      out.chain = [chain[0], ...chain.slice(1).flatMap((e) => (typeof e === 'string' ? e.split('.') : [e]))];
    }
    return out;
  };
  return visit(ast) as AstNode;
}

function combine(exprs: AstNode[]): AstNode {
  if (exprs.length === 0) return TRUE;
  return exprs.length === 1 ? exprs[0]! : n('And', { exprs });
}

async function eventFilterAst(filter: EventFilter, ctx: FilterContext): Promise<AstNode> {
  const exprs: AstNode[] = [];
  if (filter.type === 'events') {
    exprs.push(
      filter.id === null || filter.id === undefined
        ? TRUE
        : n('CompareOperation', {
            op: '==',
            left: n('Field', { chain: ['event'] }),
            right: n('Constant', { value: filter.id }),
          }),
    );
  } else if (filter.type === 'actions') {
    throw new HogCompileError('Action filters are not supported in real-time filters here');
  }
  if (filter.properties && filter.properties.length > 0) exprs.push(await propertyToAst(filter.properties, ctx));
  const expr = combine(exprs);
  return NESTED_PROPERTY_EVENTS.has(String(filter.id)) ? resolveNestedKeys(expr) : expr;
}

/** PostHog's hog_function_filters_to_expr: test accounts AND properties AND (any of the events). */
export async function filtersToAst(filters: HogFunctionFilters, ctx: FilterContext = {}): Promise<AstNode> {
  const testAccounts: AstNode[] = [];
  if (filters.filter_test_accounts) {
    for (const p of ctx.testAccountFilters ?? []) {
      if (typeof p.type === 'string' && p.type.endsWith('cohort')) {
        throw new HogCompileError(
          "Your internal/test user filters include cohorts that can't be used in real-time filters: " +
            `cohort id=${String(p.value)}. ` +
            'Replace the cohort with inline person property filters.',
        );
      }
      testAccounts.push(await propertyToAst(p, ctx));
    }
  }
  let properties: AstNode[] = [];
  for (const p of filters.properties ?? []) properties.push(await propertyToAst(p, ctx));
  const all = [...(filters.events ?? []), ...(filters.actions ?? [])];
  if (all.length === 0) return combine([...testAccounts, ...properties]);
  const events: AstNode[] = [];
  for (const f of all) events.push(await eventFilterAst(f, ctx));
  // Global properties apply to every branch: their dotted keys are nested only when every branch is such an event.
  if (all.every((f) => NESTED_PROPERTY_EVENTS.has(String(f.id)))) properties = properties.map(resolveNestedKeys);
  return combine([...testAccounts, ...properties, events.length > 1 ? n('Or', { exprs: events }) : events[0]!]);
}

function hasSelect(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasSelect);
  if (typeof value !== 'object' || value === null) return false;
  const node = (value as { node?: unknown }).node;
  if (node === 'SelectQuery' || node === 'SelectSetQuery') return true;
  return Object.values(value).some(hasSelect);
}

/** PostHog's compile_filters_bytecode: never throws, an error goes in `bytecode_error`. */
export async function compileFilters(filters: HogFunctionFilters | null | undefined, ctx: FilterContext = {}) {
  const out: CompiledFilters = { ...(filters ?? {}), bytecode: null };
  delete out.bytecode_error;
  try {
    const ast = await filtersToAst(filters ?? {}, ctx);
    if (hasSelect(ast)) throw new HogCompileError('Select queries are not allowed in filters');
    const compiled = compileAst(ast);
    if (compiled.errors.length > 0) {
      throw new HogCompileError(`Filter compilation errors: ${compiled.errors.map((e) => e.message).join('; ')}`);
    }
    out.bytecode = compiled.bytecode;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    out.bytecode_error = message.includes("Can't use cohorts in real-time filters")
      ? "Cohort membership can't be evaluated in real-time filters. " +
        'Replace cohorts with equivalent inline person property filters.'
      : message;
  }
  return out;
}

export interface FilterEvent {
  uuid?: string;
  event: string;
  distinct_id?: string;
  timestamp?: string;
  properties?: Record<string, unknown>;
  elements_chain?: string;
}

export interface FilterPerson {
  id: string;
  properties: Record<string, unknown>;
}

export interface FilterGroup {
  key: string;
  index: number;
  properties: Record<string, unknown>;
}

const MAX_GROUP_TYPES = 5;

function distinct(regex: RegExp, text: string): string[] {
  return [...new Set([...text.matchAll(regex)].map((m) => m[1]!))];
}

/** What filter bytecode reads of an event, as PostHog's convertToHogFunctionFilterGlobal builds it. */
export function filterGlobals(event: FilterEvent, person?: FilterPerson | null, groups?: Record<string, FilterGroup>) {
  const properties = event.properties ?? {};
  const globals: Record<string, unknown> = {};
  for (let i = 0; i < MAX_GROUP_TYPES; i++) globals[`group_${i}`] = { key: null, index: i, properties: {} };
  for (const [type, g] of Object.entries(groups ?? {})) {
    globals[`group_${g.index}`] = { key: g.key, index: g.index, properties: g.properties };
    globals[type] = globals[`group_${g.index}`];
  }
  const chain = event.elements_chain ?? (properties.$elements_chain as string | undefined) ?? '';
  Object.assign(globals, {
    event: event.event,
    uuid: event.uuid,
    elements_chain: chain,
    elements_chain_href: /(?::|")href="(.*?)"/.exec(chain)?.[1] ?? '',
    elements_chain_texts: distinct(/(?::|")text="(.*?)"/g, chain),
    elements_chain_ids: distinct(/(?::|")attr_id="(.*?)"/g, chain),
    elements_chain_elements: distinct(/(?:^|;)(a|button|form|input|select|textarea|label)(?:\.|$|:)/g, chain),
    timestamp: event.timestamp,
    properties,
    person: person ? { id: person.id, properties: person.properties } : null,
    pdi: person
      ? {
          distinct_id: event.distinct_id,
          person_id: person.id,
          person: { id: person.id, properties: person.properties },
        }
      : null,
    distinct_id: event.distinct_id,
  });
  return globals;
}

/** Whether an event passes compiled filters: true only for a boolean true result, as PostHog. */
export function matchesFilters(
  bytecode: Bytecode,
  globals: Record<string, unknown>,
  timeoutMs: number = HOG_LIMITS.filterTimeoutMs,
): { match: boolean; error?: string } {
  try {
    const res = hogvm.exec(bytecode, {
      globals,
      timeout: timeoutMs,
      maxAsyncSteps: 0,
      external: HOG_EXTERNAL,
    });
    if (res.error) return { match: false, error: String((res.error as Error).message ?? res.error) };
    if (!res.finished) return { match: false, error: 'Filters cannot call async functions' };
    return { match: res.result === true };
  } catch (err) {
    return { match: false, error: err instanceof Error ? err.message : String(err) };
  }
}
