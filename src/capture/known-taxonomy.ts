import type { Db } from '../db/client.js';
import { definitionsOf, type DefinitionInput, type LinkInput } from './property-definitions.js';
import type { CapturedEvent } from './normalize.js';

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
    const now = Date.now();
    // What is remembered is left out as the batch is read, before its values are typed.
    return definitionsOf(batch, {
      definition: (type, name) => this.has(definitionKey(projectId, type, name), now),
      link: (event, property) => this.has(linkKey(projectId, event, property), now),
    });
  }

  remember(projectId: number, taxonomy: Taxonomy): void {
    if (this.known.size > KNOWN_LIMIT) this.known.clear();
    const until = Date.now() + KNOWN_TTL_MS;
    for (const d of taxonomy.definitions)
      if (d.property_type) this.known.set(definitionKey(projectId, d.type, d.name), until);
    for (const l of taxonomy.links) this.known.set(linkKey(projectId, l.event, l.property), until);
  }

  forget(projectId: number, type: number, name: string): void {
    this.known.delete(definitionKey(projectId, type, name));
  }
}

const definitionKey = (projectId: number, type: number, name: string) => `d${projectId}\u0000${type}\u0000${name}`;
const linkKey = (projectId: number, event: string, property: string) => `l${projectId}\u0000${event}\u0000${property}`;

const knownByDb = new WeakMap<Db, KnownTaxonomy>();

export function knownTaxonomy(db: Db): KnownTaxonomy {
  let known = knownByDb.get(db);
  if (!known) knownByDb.set(db, (known = new KnownTaxonomy()));
  return known;
}
