import type { CapturedEvent } from './normalize.js';
import { eachInTurns } from '../core/turns.js';

export type PropertyType = 'DateTime' | 'String' | 'Numeric' | 'Boolean';

/** PostHog's numbers for what a property belongs to. */
export const PropertyKind = { event: 1, person: 2 } as const;

export interface DefinitionInput {
  name: string;
  type: number;
  property_type: PropertyType | null;
}

export interface LinkInput {
  event: string;
  property: string;
}

/** Keys with a meaning of their own in an event's properties, which PostHog does not define as event properties. */
const SKIPPED = new Set([
  '$set',
  '$set_once',
  '$unset',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
  '$groups',
]);
/** Events whose properties PostHog leaves out of its taxonomy (groups are not supported here). */
const SKIPPED_EVENTS = new Set(['$$plugin_metrics', '$groupidentify']);
/** PostHog drops property names longer than this rather than store them. */
const MAX_NAME_LENGTH = 200;
/** A generous bound, so that one odd event cannot flood a project's taxonomy. */
const MAX_PROPERTIES_PER_EVENT = 1000;
const DATETIME_NAME_KEYWORDS = ['time', 'timestamp', 'date', '_at', '-at', 'createdat', 'updatedat'];
const SIX_MONTHS_S = 15_768_000;
// A date, day first or year first, optionally followed by a time: a strong hint of a timestamp.
const YEAR_FIRST = '[0-9]{4}[/-][0-2][0-9][/-][0-3][0-9]';
const DAY_FIRST = '[0-2][0-9][/-][0-3][0-9][/-][0-9]{4}';
const TIME_OF_DAY = '[ T][0-2][0-9]:[0-6][0-9]:[0-6][0-9].*';
const DATETIME_PREFIX = new RegExp(`^((${YEAR_FIRST})|(${DAY_FIRST}))(${TIME_OF_DAY})?$`);
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const WEEKDAY = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const ZONE = String.raw`([+-]\d{4}|GMT|UT|[A-Z]{3})`;
const RFC2822 = new RegExp(String.raw`^(?:${WEEKDAY}, )?\d{1,2} ${MONTH} \d{4} \d{2}:\d{2}(:\d{2})? ${ZONE}$`);

function isLikelyDateString(s: string): boolean {
  return RFC3339.test(s) || RFC2822.test(s) || DATETIME_PREFIX.test(s);
}

/**
 * The type PostHog's ingestion gives a property from its name and first value: some prefixes are
 * always strings (their first values mislead), a date-like name with a date-like value or a recent
 * unix timestamp is a DateTime, and otherwise the JSON type decides ("true"/"false" strings are
 * Boolean, date-like strings DateTime). Objects, arrays and null tell nothing.
 */
export function detectPropertyType(rawName: string, value: unknown, nowMs = Date.now()): PropertyType | null {
  const name = rawName.toLowerCase();
  if (
    name.startsWith('utm_') ||
    name.startsWith('$feature/') ||
    name === '$feature_flag_response' ||
    name.startsWith('$survey_response')
  ) {
    return 'String';
  }
  if (DATETIME_NAME_KEYWORDS.some((kw) => name.includes(kw))) {
    if (typeof value === 'string' && isLikelyDateString(value)) return 'DateTime';
    if (
      typeof value === 'number' &&
      Number.isInteger(value) &&
      value >= 0 &&
      value >= Math.floor(nowMs / 1000) - SIX_MONTHS_S
    ) {
      return 'DateTime';
    }
  }
  if (typeof value === 'string') {
    const s = value.trim();
    if (s === 'true' || s === 'false' || s === 'TRUE' || s === 'FALSE') return 'Boolean';
    return isLikelyDateString(s) ? 'DateTime' : 'String';
  }
  if (typeof value === 'number') return 'Numeric';
  if (typeof value === 'boolean') return 'Boolean';
  return null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the caller knows to be stored already, which `definitionsOf` leaves out. */
export interface StoredTaxonomy {
  /** A definition stored with its type. */
  definition(type: number, name: string): boolean;
  link(event: string, property: string): boolean;
}

const NOTHING_STORED: StoredTaxonomy = { definition: () => false, link: () => false };

/**
 * The definitions and event-property links a batch implies, each once: event properties, and the
 * person properties its `$set`/`$set_once` name. A name's first typed value in the batch decides.
 * A large batch is read in turns, so that other requests are served meanwhile.
 */
export async function definitionsOf(
  batch: CapturedEvent[],
  stored: StoredTaxonomy = NOTHING_STORED,
): Promise<{ definitions: DefinitionInput[]; links: LinkInput[] }> {
  const definitions = new Map<string, DefinitionInput>();
  const links = new Map<string, LinkInput>();
  /** Definitions already stored with a type: left out, and their values never typed (the regexes cost most). */
  const skipped = new Set<string>();
  const define = (name: string, type: number, value: unknown) => {
    if (name.length > MAX_NAME_LENGTH) return false;
    const key = `${type}\u0000${name}`;
    if (skipped.has(key)) return true;
    const known = definitions.get(key);
    if (!known) {
      if (stored.definition(type, name)) skipped.add(key);
      else definitions.set(key, { name, type, property_type: detectPropertyType(name, value) });
    } else if (known.property_type === null) known.property_type = detectPropertyType(name, value);
    return true;
  };
  await eachInTurns(batch, (e) => {
    if (SKIPPED_EVENTS.has(e.event)) return;
    let n = 0;
    for (const [name, value] of Object.entries(e.properties)) {
      if (SKIPPED.has(name)) continue;
      if (++n > MAX_PROPERTIES_PER_EVENT) break;
      if (!define(name, PropertyKind.event, value)) continue;
      const link = `${e.event}\u0000${name}`;
      if (!links.has(link) && !stored.link(e.event, name)) links.set(link, { event: e.event, property: name });
    }
    for (const set of [e.properties.$set, e.properties.$set_once]) {
      if (!isObject(set)) continue;
      let m = 0;
      for (const [name, value] of Object.entries(set)) {
        if (++m > MAX_PROPERTIES_PER_EVENT) break;
        define(name, PropertyKind.person, value);
      }
    }
  });
  return { definitions: [...definitions.values()], links: [...links.values()] };
}
