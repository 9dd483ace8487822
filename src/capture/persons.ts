import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CapturedEvent } from './normalize.js';

type Properties = Record<string, unknown>;

/** A person as the batch leaves it: an existing row (`id`) or one to insert (`uuid` only). */
export interface PersonState {
  id?: number;
  uuid: string;
  properties: Properties;
  is_identified: boolean;
  /** When the person was first seen: the creating event's time (the earlier one's after a merge). */
  created_at?: Date;
  isNew: boolean;
  dirty: boolean;
  mergedInto?: PersonState;
}

export interface ExistingPerson {
  id: number;
  uuid: string;
  properties: Properties;
  is_identified: boolean;
  created_at?: Date;
}

const isObject = (v: unknown): v is Properties => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Distinct ids an event touches: its own, and the one `$identify` / `$create_alias` links to it. */
export function linkedIdOf(e: CapturedEvent): string | undefined {
  const p = e.properties;
  const other =
    e.event === '$identify'
      ? p.$anon_distinct_id
      : e.event === '$create_alias' || e.event === '$merge_dangerously'
        ? p.alias
        : undefined;
  if (other === undefined || other === null || other === '') return undefined;
  const id = String(other).slice(0, 200);
  return id === e.distinct_id ? undefined : id;
}

export const processesPerson = (e: CapturedEvent) => e.properties.$process_person_profile !== false;

const hasKeys = (v: unknown) => isObject(v) && Object.keys(v).length > 0;

/**
 * Whether an event can do more to persons than give its distinct id one: link ids, identify, or
 * set or unset properties (the updates `PersonPlanner.apply` reads).
 */
export function changesPerson(e: CapturedEvent): boolean {
  if (!processesPerson(e)) return false;
  if (e.event === '$identify' || linkedIdOf(e)) return true;
  const { $set, $set_once, $unset } = e.properties;
  return hasKeys($set) || hasKeys($set_once) || (Array.isArray($unset) ? $unset.length > 0 : hasKeys($unset));
}

/**
 * Replays a batch's effect on persons in memory, in event order, as PostHog's person processing
 * does: one person per distinct id, `$identify` / `$create_alias` link ids (merging two persons
 * unless the one being absorbed is already identified; `$merge_dangerously` merges regardless),
 * `$set_once` then `$set` then `$unset` change properties. The caller writes the outcome.
 */
export class PersonPlanner {
  private readonly owners = new Map<string, PersonState>();
  /** Distinct ids with no row yet, and the person each will belong to. */
  readonly newLinks = new Map<string, PersonState>();
  /** Existing persons absorbed into another, in the order it happened. */
  readonly merges: { from: PersonState; to: PersonState }[] = [];
  readonly persons: PersonState[] = [];

  constructor(mapping: Map<string, number>, rows: ExistingPerson[]) {
    const byId = new Map<number, PersonState>();
    for (const r of rows) {
      const state: PersonState = { ...r, properties: { ...r.properties }, isNew: false, dirty: false };
      byId.set(r.id, state);
      this.persons.push(state);
    }
    for (const [distinctId, personId] of mapping) {
      const state = byId.get(personId);
      if (state) this.owners.set(distinctId, state);
    }
  }

  static resolve(p: PersonState): PersonState {
    while (p.mergedInto) p = p.mergedInto;
    return p;
  }

  private find(distinctId: string): PersonState | undefined {
    const p = this.owners.get(distinctId);
    return p && PersonPlanner.resolve(p);
  }

  private create(distinctIds: string[], at: Date): PersonState {
    const state: PersonState = {
      uuid: randomUUID(),
      properties: {},
      is_identified: false,
      created_at: at,
      isNew: true,
      dirty: true,
    };
    this.persons.push(state);
    for (const d of distinctIds) this.addId(d, state);
    return state;
  }

  private addId(distinctId: string, person: PersonState): void {
    this.owners.set(distinctId, person);
    this.newLinks.set(distinctId, person);
  }

  private identify(person: PersonState): void {
    if (!person.is_identified) {
      person.is_identified = true;
      person.dirty = true;
    }
  }

  private link(intoId: string, otherId: string, force: boolean, at: Date): void {
    const into = this.find(intoId);
    const other = this.find(otherId);
    if (!into && !other) return this.identify(this.create([intoId, otherId], at));
    if (into && !other) {
      this.addId(otherId, into);
      return this.identify(into);
    }
    if (!into && other) {
      this.addId(intoId, other);
      return this.identify(other);
    }
    if (into === other || (other!.is_identified && !force)) return this.identify(into!);
    const target = into!;
    const source = other!;
    target.properties = { ...source.properties, ...target.properties };
    if (source.created_at && (!target.created_at || source.created_at < target.created_at))
      target.created_at = source.created_at;
    target.dirty = true;
    source.mergedInto = target;
    if (!source.isNew) this.merges.push({ from: source, to: target });
    this.identify(target);
  }

  /** Applies one event and returns the person it belongs to (undefined when it opts out of persons). */
  apply(e: CapturedEvent): PersonState | undefined {
    if (!processesPerson(e)) return undefined;
    const other = linkedIdOf(e);
    if (other) this.link(e.distinct_id, other, e.event === '$merge_dangerously', e.timestamp);
    const person = this.find(e.distinct_id) ?? this.create([e.distinct_id], e.timestamp);
    if (e.event === '$identify') this.identify(person);
    const props = person.properties;
    const { $set, $set_once, $unset } = e.properties;
    if (isObject($set_once)) {
      for (const [k, v] of Object.entries($set_once)) {
        if (!(k in props)) {
          props[k] = v;
          person.dirty = true;
        }
      }
    }
    if (isObject($set)) {
      for (const [k, v] of Object.entries($set)) {
        if (!isDeepStrictEqual(props[k], v)) {
          props[k] = v;
          person.dirty = true;
        }
      }
    }
    const unset = Array.isArray($unset) ? $unset : isObject($unset) ? Object.keys($unset) : [];
    for (const k of unset) {
      if (typeof k === 'string' && k in props) {
        delete props[k];
        person.dirty = true;
      }
    }
    return person;
  }
}
