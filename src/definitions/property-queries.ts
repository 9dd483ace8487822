import { and, asc, eq, getTableColumns, ilike, inArray, like, notInArray, notLike, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { event_properties, property_definitions } from '../db/schema/index.js';
import type { Page } from '../core/paging.js';
import { countWhere } from '../db/queries/util.js';
import { knownTaxonomy } from '../capture/known-taxonomy.js';

export type PropertyDefinitionRow = typeof property_definitions.$inferSelect & {
  is_seen_on_filtered_events: boolean | null;
};
export type PropertyDefinitionChanges = Partial<
  Pick<
    typeof property_definitions.$inferSelect,
    | 'description'
    | 'tags'
    | 'property_type'
    | 'is_numerical'
    | 'verified'
    | 'verified_at'
    | 'verified_by_id'
    | 'hidden'
    | 'updated_by_id'
  >
>;

/** Names ingestion stores that PostHog never lists: they steer ingestion rather than describe events. */
const HIDDEN = [
  'distinct_id',
  '$set',
  '$set_once',
  '$groups',
  '$group_type',
  '$group_key',
  '$group_set',
  ...[0, 1, 2, 3, 4].map((i) => `$group_${i}`),
];
/** PostHog's campaign parameters, part of its core taxonomy along with its own `$` properties. */
const CAMPAIGN = [
  ...['utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_term'],
  ...['gclid', 'gad_source', 'gclsrc', 'dclid', 'gbraid', 'wbraid', 'fbclid', 'msclkid', 'twclid'],
  ...['li_fat_id', 'mc_cid', 'igshid', 'ttclid', 'rdt_cid', 'irclid', '_kx'],
];

export interface PropertyDefinitionFilter {
  type: number;
  search?: string;
  eventNames?: string[];
  filterByEventNames?: boolean | null;
  excludeCore: boolean;
  excludeHidden: boolean;
  isNumerical?: boolean | null;
  isFeatureFlag?: boolean | null;
  excludedNames: string[];
  names?: string[];
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
const pd = property_definitions;
/** Every column, for a select that adds a computed one. */
const columns = getTableColumns(pd);

function seenOn(projectId: number, eventNames: string[] | undefined): SQL {
  if (!eventNames?.length) return sql`null::boolean`;
  return sql`exists (select from ${event_properties} as ep where ep.project_id = ${projectId}
    and ep.event in ${eventNames} and ep.property = ${pd.name})`;
}

export async function listPropertyDefinitions(
  db: Db,
  projectId: number,
  f: PropertyDefinitionFilter,
  page: Page,
): Promise<{ count: number; rows: PropertyDefinitionRow[] }> {
  const conds: (SQL | undefined)[] = [
    eq(pd.project_id, projectId),
    eq(pd.type, f.type),
    notInArray(pd.name, [...HIDDEN, ...f.excludedNames]),
  ];
  for (const word of (f.search ?? '').split(/\s+/).filter(Boolean)) conds.push(ilike(pd.name, `%${escapeLike(word)}%`));
  if (f.names) conds.push(f.names.length ? inArray(pd.name, f.names) : sql`false`);
  if (f.isNumerical === true) conds.push(eq(pd.is_numerical, true), notInArray(pd.name, ['distinct_id', 'timestamp']));
  if (f.isNumerical === false) conds.push(eq(pd.is_numerical, false));
  if (f.isFeatureFlag === true) conds.push(like(pd.name, '$feature/%'));
  if (f.isFeatureFlag === false) conds.push(notLike(pd.name, '$feature/%'));
  if (f.excludeHidden) conds.push(eq(pd.hidden, false));
  if (f.excludeCore) conds.push(notLike(pd.name, '$%'), notInArray(pd.name, CAMPAIGN));
  const seen = seenOn(projectId, f.eventNames);
  if (f.eventNames?.length && f.filterByEventNames === true) conds.push(seen);
  if (f.eventNames?.length && f.filterByEventNames === false) conds.push(sql`not ${seen}`);
  const where = and(...conds);
  const [count, rows] = await Promise.all([
    countWhere(db, pd, where),
    db
      .select({ ...columns, is_seen_on_filtered_events: sql<boolean | null>`${seen}`.as('is_seen_on_filtered_events') })
      .from(pd)
      .where(where)
      .orderBy(sql`${seen} desc nulls last`, asc(pd.name), asc(pd.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

export async function getPropertyDefinition(
  db: Db,
  projectId: number,
  defId: string,
): Promise<PropertyDefinitionRow | undefined> {
  const [row] = await db
    .select()
    .from(pd)
    .where(and(eq(pd.project_id, projectId), eq(pd.id, defId)))
    .limit(1);
  return row && { ...row, is_seen_on_filtered_events: null };
}

export async function updatePropertyDefinition(
  db: Db,
  projectId: number,
  defId: string,
  changes: PropertyDefinitionChanges,
): Promise<PropertyDefinitionRow | undefined> {
  const [row] = await db
    .update(pd)
    .set({ ...changes, updated_at: sql`now()` })
    .where(and(eq(pd.project_id, projectId), eq(pd.id, defId)))
    .returning();
  return row && { ...row, is_seen_on_filtered_events: null };
}

/** Deletes the definition; this process forgets it at once, so the next event carrying it defines it again. */
export async function deletePropertyDefinition(
  db: Db,
  projectId: number,
  def: { id: string; type: number; name: string },
) {
  await db.delete(pd).where(and(eq(pd.project_id, projectId), eq(pd.id, def.id)));
  knownTaxonomy(db).forget(projectId, def.type, def.name);
}

/** Which of the event names have carried the property in the project. */
export async function seenTogether(
  db: Db,
  projectId: number,
  eventNames: string[],
  property: string,
): Promise<Set<string>> {
  if (!eventNames.length) return new Set();
  const rows = await db
    .select({ event: event_properties.event })
    .from(event_properties)
    .where(
      and(
        eq(event_properties.project_id, projectId),
        eq(event_properties.property, property),
        inArray(event_properties.event, eventNames),
      ),
    );
  return new Set(rows.map((r) => r.event));
}
