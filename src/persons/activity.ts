// PostHog's "Person" activity log: who updated, split or deleted a person through the API (changes that
// arrive as events are not logged, as in PostHog).
import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.js';
import { person_activity_logs, type PersonActivityDetail } from '../db/schema/index.js';
import { countWhere } from '../db/queries/util.js';

export type PersonActivity = 'updated' | 'deleted' | 'delete_property' | 'split_person';

export interface PersonActivityEntry {
  personId: number;
  activity: PersonActivity;
  detail: PersonActivityDetail;
}

/** A change of a person as PostHog's `Change` writes it (`before`/`after` only where PostHog fills them). */
export const personChange = (action: string, field: string | null = null, after: unknown = null) => ({
  type: 'Person' as const,
  action,
  field,
  before: null,
  after,
});

export async function logPersonActivity(
  db: Db | Tx,
  projectId: number,
  userId: number | null,
  entries: PersonActivityEntry[],
): Promise<void> {
  if (!entries.length) return;
  // clock_timestamp, not now(): entries of one transaction still come out in the order they were made.
  await db.insert(person_activity_logs).values(
    entries.map((e) => ({
      project_id: projectId,
      person_id: e.personId,
      user_id: userId,
      activity: e.activity,
      detail: e.detail,
      created_at: sql`clock_timestamp()`,
    })),
  );
}

export type PersonActivityRow = typeof person_activity_logs.$inferSelect;

/** A page of the project's person activity, newest first; of one person when `personId` is given. */
export async function personActivityPage(
  db: Db,
  projectId: number,
  personId: number | undefined,
  limit: number,
  page: number,
): Promise<{ total: number; rows: PersonActivityRow[] }> {
  const where: SQL | undefined = and(
    eq(person_activity_logs.project_id, projectId),
    personId === undefined ? undefined : eq(person_activity_logs.person_id, personId),
  );
  const [total, rows] = await Promise.all([
    countWhere(db, person_activity_logs, where),
    db
      .select()
      .from(person_activity_logs)
      .where(where)
      .orderBy(desc(person_activity_logs.created_at), desc(person_activity_logs.id))
      .limit(limit)
      .offset((page - 1) * limit),
  ]);
  return { total, rows };
}
