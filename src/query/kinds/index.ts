import { ApiError } from '../../core/errors.js';
import type { Executor } from './execute.js';
import { type PreparedFunnels, prepareFunnels, runFunnels } from './funnels.js';
import { type PreparedLifecycle, prepareLifecycle, runLifecycle } from './lifecycle.js';
import { type PreparedPaths, preparePaths, runPaths } from './paths.js';
import { type PreparedRetention, prepareRetention, runRetention } from './retention.js';
import { type PreparedStickiness, prepareStickiness, runStickiness } from './stickiness.js';
import { withTestAccountFilters } from './test-accounts.js';
import { type PreparedTrends, prepareTrends, runTrends } from './trends.js';

/** PostHog's insight query kinds this server computes. */
export const INSIGHT_KINDS = new Set([
  'TrendsQuery',
  'LifecycleQuery',
  'StickinessQuery',
  'FunnelsQuery',
  'RetentionQuery',
  'PathsQuery',
]);

/** A request's insight query node, as sent (its fields are checked by `prepareInsight`). */
export interface InsightNode {
  kind: 'TrendsQuery' | 'LifecycleQuery' | 'StickinessQuery' | 'FunnelsQuery' | 'RetentionQuery' | 'PathsQuery';
  [field: string]: unknown;
}

export type PreparedInsight = (
  | PreparedTrends
  | PreparedLifecycle
  | PreparedStickiness
  | PreparedFunnels
  | PreparedRetention
  | PreparedPaths
) & { filterTestAccounts?: boolean };

export const isInsightNode = (node: { kind: string }): node is InsightNode => INSIGHT_KINDS.has(node.kind);

/** Checks an insight query for its kind: a bad one throws its 400 here, before anything runs. */
export async function prepareInsight(node: InsightNode): Promise<PreparedInsight> {
  const prepared = await prepareKind(node);
  return node.filterTestAccounts === true ? { ...prepared, filterTestAccounts: true } : prepared;
}

function prepareKind(node: InsightNode): PreparedInsight | Promise<PreparedInsight> {
  switch (node.kind) {
    case 'TrendsQuery':
      return prepareTrends(node);
    case 'LifecycleQuery':
      return prepareLifecycle(node);
    case 'StickinessQuery':
      return prepareStickiness(node);
    case 'FunnelsQuery':
      return prepareFunnels(node);
    case 'RetentionQuery':
      return prepareRetention(node);
    case 'PathsQuery':
      return preparePaths(node);
    default:
      throw ApiError.invalidChoice('query__kind', (node as { kind: string }).kind);
  }
}

/** Runs a prepared insight query for one project and answers in PostHog's response shape for its kind. */
export async function runInsight(ex: Executor, teamId: number, query: PreparedInsight) {
  const prepared = query.filterTestAccounts ? await withTestAccountFilters(ex.engine.db, teamId, query) : query;
  switch (prepared.kind) {
    case 'TrendsQuery':
      return runTrends(ex, teamId, prepared);
    case 'LifecycleQuery':
      return runLifecycle(ex, teamId, prepared);
    case 'StickinessQuery':
      return runStickiness(ex, teamId, prepared);
    case 'FunnelsQuery':
      return runFunnels(ex, teamId, prepared);
    case 'RetentionQuery':
      return runRetention(ex, teamId, prepared);
    case 'PathsQuery':
      return runPaths(ex, teamId, prepared);
  }
}

export type InsightAnswer = Awaited<ReturnType<typeof runInsight>>;
