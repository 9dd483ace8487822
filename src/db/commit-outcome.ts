import { setTimeout as pause } from 'node:timers/promises';
import type { Sql } from 'postgres';

/**
 * A transaction whose COMMIT was sent but whose answer was lost with the connection, and whose
 * outcome could not be learnt in time: it may or may not have taken effect.
 */
export class CommitOutcomeUnknown extends Error {
  readonly code = 'COMMIT_OUTCOME_UNKNOWN';
  constructor(cause: unknown) {
    super('The connection was lost while committing, and whether the commit took effect could not be learnt', {
      cause,
    });
  }
}

/** How long the outcome of a commit whose answer was lost is sought before the caller is told it is unknown. */
const OUTCOME_WAIT_MS = 5_000;
const RETRY_MS = 100;

/**
 * Whether transaction `xid` committed, asked on another connection of `sql`: `pg_xact_status` reads
 * the commit log, which a terminated backend or a restart leaves as it was. A backend still finishing
 * the commit shows 'in progress' for a moment, and a server that is restarting cannot be asked, so
 * both are asked again until `OUTCOME_WAIT_MS` has passed; then the answer is 'unknown'.
 */
export async function commitOutcome(sql: Sql, xid: string): Promise<'committed' | 'aborted' | 'unknown'> {
  const until = Date.now() + OUTCOME_WAIT_MS;
  while (Date.now() < until) {
    const status = await Promise.race([
      sql`select pg_xact_status(${xid}::xid8)::text as status`.then(
        ([row]) => row?.status as string | undefined,
        () => undefined,
      ),
      pause(Math.max(0, until - Date.now()), undefined, { ref: false }),
    ]);
    if (status === 'committed' || status === 'aborted') return status;
    await pause(RETRY_MS);
  }
  return 'unknown';
}
