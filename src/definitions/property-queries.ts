import { and, asc, eq, getTableColumns, ilike, inArray, like, notInArray, notLike, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { event_properties, property_definitions } from '../db/schema/index.js';
import type { Page } from '../core/paging.js';
import { definitionsOf, type DefinitionInput, type LinkInput } from '../capture/property-definitions.js';
import type { CapturedEvent } from '../capture/normalize.js';
import { countWhere } from '../db/queries/util.js';

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

export interface Taxonomy {
  definitions: DefinitionInput[];
  links: LinkInput[];
}

/** Past this many entries a process forgets what it has stored and learns it again. */
const KNOWN_LIMIT = 100_000;
/**
 * How long a process trusts what it remembers. A definition deleted through another process is
 * defined again by the next event carrying it once this has passed.
 */
const KNOWN_TTL_MS = 60_000;

/**
 * What this process has already stored of each database's taxonomy, so that a busy project's
 * batches stop sending the same definitions again. Only rows whose type is known are remembered:
 * an untyped definition keeps being offered until a typed value arrives. Forgetting costs a few
 * no-op upserts, never a wrong answer, since the database decides.
 */
class KnownTaxonomy {
  /** Key to the time it stops being trusted. */
  private known = new Map<string, number>();

  private has(key: string, now: number): boolean {
    const until = this.known.get(key);
    return until !== undefined && until > now;
  }

  async unseen(projectId: number, batch: CapturedEvent[]): Promise<Taxonomy> {
    const { definitions, links } = await definitionsOf(batch);
    const now = Date.now();
    return {
      definitions: definitions.filter((d) => !this.has(definitionKey(projectId, d.type, d.name), now)),
      links: links.filter((l) => !this.has(`l${projectId}\u0000${l.event}\u0000${l.property}`, now)),
    };
  }

  remember(projectId: number, taxonomy: Taxonomy): void {
    if (this.known.size > KNOWN_LIMIT) this.known.clear();
    const until = Date.now() + KNOWN_TTL_MS;
    for (const d of taxonomy.definitions)
      if (d.property_type) this.known.set(definitionKey(projectId, d.type, d.name), until);
    for (const l of taxonomy.links) this.known.set(`l${projectId}\u0000${l.event}\u0000${l.property}`, until);
  }

  forget(projectId: number, type: number, name: string): void {
    this.known.delete(definitionKey(projectId, type, name));
  }
}

const definitionKey = (projectId: number, type: number, name: string) => `d${projectId}\u0000${type}\u0000${name}`;

const knownByDb = new WeakMap<Db, KnownTaxonomy>();

export function knownTaxonomy(db: Db): KnownTaxonomy {
  let known = knownByDb.get(db);
  if (!known) knownByDb.set(db, (known = new KnownTaxonomy()));
  return known;
}

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
