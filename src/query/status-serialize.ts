import type { components } from '../../generated/api.js';
import type { QueryStatusRow } from './status-queries.js';

type QueryStatus = components['schemas']['QueryStatus'];

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/**
 * A query status row as PostHog's QueryStatus, as JSON text in pieces: `results` is the answer once
 * complete, spliced in as the text it was stored as (never parsed and written again).
 */
export function queryStatusPieces(row: QueryStatusRow): string[] {
  const { results: _, ...rest } = presentQueryStatus(row).query_status;
  const head = JSON.stringify(rest);
  return ['{"query_status":', head.slice(0, -1), ',"results":', row.answer ?? 'null', '}}'];
}

/** A query status row as PostHog's QueryStatus, `results` left null (see queryStatusPieces for the answer). */
export function presentQueryStatus(row: QueryStatusRow): { query_status: QueryStatus } {
  const ended = row.state !== 'running';
  const failed = row.state === 'failed' || row.state === 'cancelled';
  return {
    query_status: {
      id: row.id,
      team_id: row.project_id,
      complete: ended,
      error: failed,
      error_message: failed ? (row.error_message ?? 'Query failed') : null,
      query_async: true,
      results: null,
      start_time: iso(row.start_time)!,
      pickup_time: iso(row.pickup_time),
      end_time: iso(row.end_time),
      expiration_time: iso(row.expires_at),
    },
  };
}
