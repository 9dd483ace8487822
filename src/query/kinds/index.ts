import { ApiError } from '../../core/errors.js';
import type { Executor } from './execute.js';
import { type PreparedTrends, prepareTrends, runTrends } from './trends.js';

/** PostHog's insight query kinds this server computes. */
export const INSIGHT_KINDS = new Set(['TrendsQuery']);

/** A request's insight query node, as sent (its fields are checked by `prepareInsight`). */
export interface InsightNode {
  kind: 'TrendsQuery';
  [field: string]: unknown;
}

export type PreparedInsight = PreparedTrends;

export const isInsightNode = (node: { kind: string }): node is InsightNode => INSIGHT_KINDS.has(node.kind);

/** Checks an insight query for its kind: a bad one throws its 400 here, before anything runs. */
export function prepareInsight(node: InsightNode): PreparedInsight {
  if (node.kind === 'TrendsQuery') return prepareTrends(node);
  throw ApiError.invalidChoice('query__kind', node.kind);
}

/** Runs a prepared insight query for one project and answers in PostHog's response shape for its kind. */
export async function runInsight(ex: Executor, teamId: number, prepared: PreparedInsight) {
  return runTrends(ex, teamId, prepared);
}

export type InsightAnswer = Awaited<ReturnType<typeof runInsight>>;
