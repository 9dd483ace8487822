// What the insights tests share: a PostHog schema check of an Insight answer, and the trends query the
// tests save, computed over events whose counts the tests work out by hand.
import type { Test } from 'tap';
import { posthogValidator } from '../query-kinds/posthog-schema.js';

const insightSchema = posthogValidator('Insight');

/**
 * PostHog's published Insight schema types its computed fields (`result`, `columns`, `is_cached`, ...)
 * as strings, an artifact of its generator (see the schema copy's README): those are left to our contract.
 */
const COMPUTED = new Set([
  'result',
  'hasMore',
  'columns',
  'types',
  'hogql',
  'is_cached',
  'query_status',
  'last_refresh',
  'cache_target_age',
  'next_allowed_client_refresh',
  'timezone',
  'alerts',
  'last_viewed_at',
  'user_access_level',
]);

export function checkPosthogInsight(t: Test, body: Record<string, unknown>): void {
  if (!insightSchema) return;
  insightSchema(body);
  const problems = (insightSchema.errors ?? []).filter((e) => {
    const field = e.instancePath.split('/')[1] ?? (e.params as { missingProperty?: string }).missingProperty;
    return !COMPUTED.has(field ?? '');
  });
  t.same(problems, [], 'a PostHog Insight');
}

export const trendsQuery = (extra: Record<string, unknown> = {}) => ({
  kind: 'InsightVizNode',
  source: {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: '$pageview', math: 'total' }],
    dateRange: { date_from: '2024-05-01', date_to: '2024-05-03' },
    ...extra,
  },
});
