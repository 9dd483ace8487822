import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import type { query_statuses } from '../db/schema/query-statuses.js';
import { rowsOf } from '../db/queries/util.js';

/** A status as read: `answer` is the answer's JSON text (never parsed here: it may be tens of megabytes). */
export type QueryStatusRow = Omit<typeof query_statuses.$inferSelect, 'answer'> & { answer: string | null };
export type QueryState = 'running' | 'complete' | 'failed' | 'cancelled';

/** The application_name a run's transaction carries while its statement runs (see runReadOnly). */
export const runApplicationName = (run: string) => `posthog-api:query:${run}`;

const COLUMNS = sql.raw(
  'project_id, id, run, state, answer::text as answer, error_message, start_time, pickup_time, end_time, ' +
    'backend_pid, backend_start, owner, expires_at',
);

/**
 * A new running status for `id` in the project, replacing an ended (or expired) one of the same id, run by
 * the process whose LISTEN connection is `owner`; undefined when a query of that id is still running.
 * Expired rows of the project go first.
 */
export async function startQueryStatus(
  db: Db,
  projectId: number,
  id: string,
  owner: string,
  keepSeconds: number,
): Promise<QueryStatusRow | undefined> {
  await db.execute(
    sql`delete from query_statuses where project_id = ${projectId} and expires_at < now() and state <> 'running'`,
  );
  const rows = rowsOf<QueryStatusRow>(
    await db.execute(sql`
      insert into query_statuses (project_id, id, owner, expires_at)
      values (${projectId}, ${id}, ${owner}, now() + make_interval(secs => ${keepSeconds}))
      on conflict (project_id, id) do update set
        run = gen_random_uuid(), state = 'running', answer = null, error_message = null, start_time = now(),
        pickup_time = null, end_time = null, backend_pid = null, backend_start = null, owner = excluded.owner,
        expires_at = excluded.expires_at
      where query_statuses.state <> 'running' or query_statuses.expires_at < now()
      returning ${COLUMNS}`),
  );
  return rows[0];
}

/**
 * Records the backend about to run the statement of `run`; false when the run is no longer wanted
 * (cancelled, failed by a shutdown, or replaced), so the statement is not started.
 */
export async function pickUpQueryStatus(db: Db, projectId: number, run: string, pid: number): Promise<boolean> {
  const rows = await db.execute(sql`
    update query_statuses set pickup_time = now(), backend_pid = ${pid},
      backend_start = (select backend_start from pg_stat_activity where pid = ${pid})
    where project_id = ${projectId} and run = ${run} and state = 'running'
    returning 1 as ok`);
  return rowsOf(rows).length > 0;
}

/** Ends the running status of `run` (a cancelled or replaced one stays as it is). */
export async function finishQueryStatus(
  db: Db,
  projectId: number,
  run: string,
  end: { state: 'complete'; answer: string } | { state: 'failed'; message: string },
  keepSeconds: number,
): Promise<void> {
  // The answer is JSON text already (written in pieces from the rows PostgreSQL sent).
  const answer = end.state === 'complete' ? end.answer : null;
  const message = end.state === 'failed' ? end.message : null;
  await db.execute(sql`
    update query_statuses set state = ${end.state}, answer = ${answer}::jsonb, error_message = ${message},
      end_time = now(), backend_pid = null, backend_start = null,
      expires_at = now() + make_interval(secs => ${keepSeconds})
    where project_id = ${projectId} and run = ${run} and state = 'running'`);
}

/**
 * The project's status of `id`, as it stands: a running one whose backend is gone, or that has no backend
 * yet and whose process's LISTEN connection is gone (its process died: a process that stops fails its runs
 * itself), or whose expiry passed, is failed first, with `message`. An ended status past its expiry is gone
 * (undefined).
 */
export async function findQueryStatus(
  db: Db,
  projectId: number,
  id: string,
  message: string,
  keepSeconds: number,
): Promise<QueryStatusRow | undefined> {
  const rows = rowsOf<QueryStatusRow>(
    await db.execute(sql`
      with dead as (
        update query_statuses s set state = 'failed', error_message = ${message}, end_time = now(),
          backend_pid = null, backend_start = null, expires_at = now() + make_interval(secs => ${keepSeconds})
        where s.project_id = ${projectId} and s.id = ${id} and s.state = 'running'
          and (s.expires_at < now() or (s.backend_pid is not null and not exists (
            select 1 from pg_stat_activity a where a.pid = s.backend_pid and a.backend_start = s.backend_start))
            or (s.backend_pid is null and s.owner is not null and not exists (
              select 1 from pg_stat_activity a where a.application_name = s.owner)))
        returning ${COLUMNS}
      )
      select ${COLUMNS} from dead
      union all
      select ${COLUMNS} from query_statuses s
      where s.project_id = ${projectId} and s.id = ${id} and not exists (select 1 from dead)
        and (s.state = 'running' or s.expires_at >= now())`),
  );
  return rows[0];
}

/** Told each stopped run's id, so that the process running it keeps cancelling its statement until it stops. */
export const RUNS_STOPPED_CHANNEL = 'query_runs_stopped';

/**
 * Sets running statuses to `state` with `message` and stops the statements they run, in any process: a
 * cancel now, and a notification on RUNS_STOPPED_CHANNEL for the runner (see RunTag.signal).
 */
async function stopRuns(db: Db, where: ReturnType<typeof sql>, state: QueryState, message: string, keep: number) {
  const rows = await db.execute(sql`
    with stopped as (
      -- backend_pid stays: RETURNING gives the updated row, and the cancel below needs the backend.
      update query_statuses s set state = ${state}, error_message = ${message}, end_time = now(),
        expires_at = now() + make_interval(secs => ${keep})
      where ${where} and s.state = 'running'
      returning s.run, s.backend_pid as pid
    )
    select s.run, pg_notify(${RUNS_STOPPED_CHANNEL}, s.run::text), coalesce((
      select pg_cancel_backend(a.pid) from pg_stat_activity a
      where a.pid = s.pid and a.application_name = 'posthog-api:query:' || s.run::text and a.state = 'active'
    ), false) as cancelled
    from stopped s`);
  return rowsOf<{ run: string; cancelled: boolean }>(rows);
}

/**
 * Cancels the project's query `id`: undefined when the project has no such status, else whether a
 * running statement was told to stop.
 */
export async function cancelQueryStatus(
  db: Db,
  projectId: number,
  id: string,
  message: string,
  keepSeconds: number,
): Promise<{ cancelled: boolean } | undefined> {
  const stopped = await stopRuns(
    db,
    sql`s.project_id = ${projectId} and s.id = ${id}`,
    'cancelled',
    message,
    keepSeconds,
  );
  if (stopped.length) return { cancelled: stopped.some((r) => r.cancelled) };
  const [row] = rowsOf(
    await db.execute(sql`select 1 as ok from query_statuses where project_id = ${projectId} and id = ${id}
      and (state = 'running' or expires_at >= now())`),
  );
  return row ? { cancelled: false } : undefined;
}

/** Fails the given runs (a stopping process's own), each scoped by its project, and stops their statements. */
export async function failQueryRuns(
  db: Db,
  runs: { projectId: number; run: string }[],
  message: string,
  keepSeconds: number,
): Promise<number> {
  if (!runs.length) return 0;
  const projects = runs.map((r) => r.projectId);
  const ids = runs.map((r) => r.run);
  const where = sql`(s.project_id, s.run) in
    (select * from unnest(${sql.param(projects)}::int[], ${sql.param(ids)}::uuid[]))`;
  return (await stopRuns(db, where, 'failed', message, keepSeconds)).length;
}
