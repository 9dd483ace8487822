import type { SomeHandlers } from '../http/types.js';
import type { Family } from './queries.js';
import { actionHandlers } from './action-handlers.js';
import { crudHandlers } from './crud-handlers.js';

function familyHandlers(family: Family) {
  return { ...crudHandlers(family), ...actionHandlers(family) };
}

type FamilyHandlers = ReturnType<typeof familyHandlers>;
type Prefixed<F extends Family> = { [K in keyof FamilyHandlers as `${F}_${K}`]: FamilyHandlers[K] };

/**
 * One family's operations under its operationIds. The four families share one implementation, so
 * each handler is typed against the destinations operation, whose schemas every family shares.
 */
function forFamily<F extends Family>(family: F): Prefixed<F> {
  const handlers = familyHandlers(family);
  return Object.fromEntries(Object.entries(handlers).map(([action, h]) => [`${family}_${action}`, h])) as Prefixed<F>;
}

export const pipelinePluginHandlers = {
  ...forFamily('pipeline_destinations'),
  ...forFamily('pipeline_frontend_apps'),
  ...forFamily('pipeline_import_apps'),
  ...forFamily('pipeline_transformations'),
} satisfies SomeHandlers;
