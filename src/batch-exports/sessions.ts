import type { Db } from '../db/client.js';
import type { BatchExportRow } from './queries.js';
import { copyBatches, inlineParams, postgresClient } from './copy-source.js';
import type { ExportColumn, RecordSource } from './records.js';

/**
 * The `sessions` model. There is no sessions table here: a session is the project's events that
 * share a `$session_id` property, aggregated at export time into PostHog's session fields. A run
 * exports the sessions whose last event falls in its interval, so a session that gains events later
 * is exported again (with all its events) by the run of its new last event, as PostHog re-exports
 * a session that changed; `session_id` is the key destinations upsert on.
 */
const COLUMNS: (ExportColumn & { value: string })[] = [
  { name: 'session_id', type: 'text', value: 'session_id' },
  { name: 'team_id', type: 'integer', value: 'team_id' },
  { name: 'distinct_id', type: 'text', value: 'distinct_id' },
  { name: 'start_timestamp', type: 'timestamptz', value: 'start_timestamp' },
  { name: 'end_timestamp', type: 'timestamptz', value: 'end_timestamp' },
  { name: 'urls', type: 'jsonb', value: 'urls' },
  { name: 'entry_current_url', type: 'text', value: 'entry_current_url' },
  { name: 'end_current_url', type: 'text', value: 'end_current_url' },
  { name: 'pageview_count', type: 'bigint', value: 'pageview_count' },
  { name: 'autocapture_count', type: 'bigint', value: 'autocapture_count' },
  { name: 'screen_count', type: 'bigint', value: 'screen_count' },
  { name: 'event_count', type: 'bigint', value: 'event_count' },
];

const SID = `(e.properties ->> '$session_id')`;
const URL = `(e.properties ->> '$current_url')`;
const ORDER = 'e.timestamp, e.id';

/** $1 the project, $2 the interval's start (null: from the beginning), $3 its end. */
const SESSIONS = `
  select ${SID} as session_id,
    min(e.project_id) as team_id,
    (array_agg(e.distinct_id order by ${ORDER}))[1] as distinct_id,
    min(e.timestamp) as start_timestamp,
    max(e.timestamp) as end_timestamp,
    to_jsonb(coalesce(array_agg(distinct ${URL}) filter (where ${URL} is not null), '{}')) as urls,
    (array_agg(${URL} order by ${ORDER}) filter (where ${URL} is not null))[1] as entry_current_url,
    (array_agg(${URL} order by e.timestamp desc, e.id desc) filter (where ${URL} is not null))[1] as end_current_url,
    count(*) filter (where e.event = '$pageview') as pageview_count,
    count(*) filter (where e.event = '$autocapture') as autocapture_count,
    count(*) filter (where e.event = '$screen') as screen_count,
    count(*) as event_count
  from events e
  where e.project_id = $1 and ${SID} in (
    select distinct ${SID} from events e
    where e.project_id = $1 and e.timestamp < $3::timestamptz
      and ($2::timestamptz is null or e.timestamp >= $2::timestamptz)
      and ${SID} <> ''
  )
  group by 1
  having max(e.timestamp) < $3::timestamptz and ($2::timestamptz is null or max(e.timestamp) >= $2::timestamptz)`;

const iso = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
const pair = (c: (typeof COLUMNS)[number]) =>
  `'${c.name}', ${c.type === 'timestamptz' ? iso(`s.${c.value}`) : `s.${c.value}`}`;
const LINE = `json_build_object(${COLUMNS.map(pair).join(', ')})::text`;

export function sessionsSource(
  db: Db,
  exp: BatchExportRow,
  start: Date | null,
  end: Date,
  deadlineMs: number,
): RecordSource {
  const params = [exp.project_id, start ? start.toISOString() : null, end.toISOString()];
  const client = postgresClient(db);
  return {
    columns: COLUMNS.map(({ name, type }) => ({ name, type })),
    key: ['session_id'],
    columnar: true,
    async count() {
      const rows = await client.unsafe<{ n: number }[]>(
        `select count(*)::int as n from (${SESSIONS}) s`,
        params as never[],
      );
      return Number(rows[0]?.n ?? 0);
    },
    batches(size, format = 'json') {
      const select =
        format === 'columns'
          ? `select ${COLUMNS.map((c) => `s.${c.value}`).join(', ')} from (${SESSIONS}) s`
          : `select ${LINE} as line from (${SESSIONS}) s order by s.end_timestamp, s.session_id`;
      return copyBatches(client, inlineParams({ sql: select, params }), size, deadlineMs);
    },
  };
}

/** The earliest event of any session of the project, for clamping backfills (null: none). */
export async function earliestSession(db: Db, exp: BatchExportRow): Promise<Date | null> {
  const rows = await postgresClient(db).unsafe<{ t: Date | null }[]>(
    `select min(e.timestamp) as t from events e where e.project_id = $1 and coalesce(${SID}, '') <> ''`,
    [exp.project_id],
  );
  return rows[0]?.t ? new Date(rows[0].t) : null;
}
