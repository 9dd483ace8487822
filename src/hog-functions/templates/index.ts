import { discord, httpJson, slack, webhook } from './destinations.js';
import { dropEvents, hashProperties, removeProperties, setProperties } from './transformations.js';
import type { HogFunctionTemplate } from './types.js';

export type { HogFunctionTemplate } from './types.js';

export const TEMPLATES: readonly HogFunctionTemplate[] = [
  webhook,
  httpJson,
  slack,
  discord,
  setProperties,
  removeProperties,
  dropEvents,
  hashProperties,
];

const byId = new Map(TEMPLATES.map((t) => [t.id, t]));

export const templateById = (id: string | null | undefined) => (id ? byId.get(id) : undefined);
