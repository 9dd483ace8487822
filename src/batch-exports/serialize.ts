import type { components } from '../../generated/api.js';
import { publicConfig } from './destination-config.js';
import type { BatchExportRow, RunRow } from './queries.js';
import type { BackfillRow } from './run-queries.js';
import type { LogRow } from './list-queries.js';

type Schemas = components['schemas'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function serializeRun(r: RunRow): Schemas['BatchExportRun'] {
  return {
    id: r.id,
    status: r.status as Schemas['BatchExportRunStatus'],
    records_completed: r.records_completed,
    latest_error: r.latest_error,
    data_interval_start: iso(r.data_interval_start),
    data_interval_end: r.data_interval_end.toISOString(),
    cursor: r.cursor,
    created_at: r.created_at.toISOString(),
    finished_at: iso(r.finished_at),
    last_updated_at: r.last_updated_at.toISOString(),
    records_total_count: r.records_total_count,
    bytes_exported: r.bytes_exported === null ? null : Number(r.bytes_exported),
    backfill: r.backfill_id,
    batch_export: r.batch_export_id,
  };
}

export function serializeBatchExport(e: BatchExportRow, runs: RunRow[]): Schemas['BatchExport'] {
  return {
    id: e.id,
    team_id: e.project_id,
    name: e.name,
    model: e.model as Schemas['BatchExportModel'],
    destination: {
      type: e.destination_type as Schemas['BatchExportDestinationType'],
      config: publicConfig(e.destination_type, e.destination_config),
      integration: null,
    },
    interval: e.interval as Schemas['BatchExportInterval'],
    paused: e.paused,
    created_at: e.created_at.toISOString(),
    last_updated_at: e.last_updated_at.toISOString(),
    last_paused_at: iso(e.last_paused_at),
    start_at: iso(e.start_at),
    end_at: iso(e.end_at),
    latest_runs: runs.map(serializeRun),
    hogql_query: typeof e.schema?.hogql_query === 'string' ? e.schema.hogql_query : '',
    schema: (e.schema as Schemas['BatchExportSchema']) ?? null,
    filters: e.filters ?? null,
  };
}

/** PostHog's progress: known while the backfill runs, complete once it completed, null otherwise. */
function progress(b: BackfillRow, counts: Record<string, number>): Schemas['BatchExportBackfillProgress'] {
  const total = Object.values(counts).reduce((a, n) => a + n, 0);
  if (b.status === 'Completed') return { total_runs: total, finished_runs: total, progress: 1 };
  if ((b.status !== 'Running' && b.status !== 'Starting') || !total) return null;
  const finished = (counts.Completed ?? 0) + (counts.Failed ?? 0);
  return { total_runs: total, finished_runs: finished, progress: Math.round((finished / total) * 10) / 10 };
}

export function serializeBackfill(b: BackfillRow, counts: Record<string, number>): Schemas['BatchExportBackfill'] {
  return {
    id: b.id,
    progress: progress(b, counts),
    start_at: iso(b.start_at),
    end_at: iso(b.end_at),
    adjusted_start_at: iso(b.adjusted_start_at),
    status: b.status as Schemas['BatchExportBackfill']['status'],
    created_at: b.created_at.toISOString(),
    finished_at: iso(b.finished_at),
    last_updated_at: b.last_updated_at.toISOString(),
    total_records_count: b.total_records_count === null ? null : Number(b.total_records_count),
    team: b.project_id,
    batch_export: b.batch_export_id,
  };
}

export function serializeLog(l: LogRow & { ts: string }): Schemas['BatchExportLogEntry'] {
  return {
    log_source_id: l.batch_export_id,
    instance_id: l.instance_id,
    timestamp: l.ts,
    level: l.level.toUpperCase() as Schemas['BatchExportLogEntry']['level'],
    message: l.message,
  };
}
