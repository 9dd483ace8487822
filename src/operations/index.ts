import type { AllHandlers } from '../http/types.js';
import { metaHandlers } from './meta.js';
import { organizationHandlers } from './organizations.js';
import { personalApiKeyHandlers } from './personal-api-keys.js';
import { pipelinePluginHandlers } from './pipeline-plugins.js';
import { pluginConfigHandlers } from './plugin-configs.js';
import { projectHandlers } from './projects.js';
import { userHandlers } from './users.js';

/** Every operation of the contract, keyed by operationId; `satisfies` makes a gap a compile error. */
export const handlers = {
  ...metaHandlers,
  ...organizationHandlers,
  ...projectHandlers,
  ...userHandlers,
  ...personalApiKeyHandlers,
  ...pipelinePluginHandlers,
  ...pluginConfigHandlers,
} satisfies AllHandlers;
