import type { AllHandlers } from '../http/types.js';
import { captureHandlers } from './capture.js';
import { dashboardCollaboratorHandlers } from './dashboard-collaborators.js';
import { dashboardSharingHandlers } from './dashboard-sharing.js';
import { dashboardHandlers } from './dashboards.js';
import { domainHandlers } from './domains.js';
import { environmentsHandlers } from './environments.js';
import { eventDefinitionHandlers } from './event-definitions.js';
import { eventHandlers } from './events.js';
import { flagDefinitionHandlers } from './flag-definitions.js';
import { inviteHandlers } from './invites.js';
import { memberHandlers } from './members.js';
import { batchExportRunHandlers } from './batch-export-runs.js';
import { batchExportHandlers } from './batch-exports.js';
import { metaHandlers } from './meta.js';
import { organizationHandlers } from './organizations.js';
import { personalApiKeyHandlers } from './personal-api-keys.js';
import { pipelinePluginHandlers } from './pipeline-plugins.js';
import { pluginConfigHandlers } from './plugin-configs.js';
import { projectHandlers } from './projects.js';
import { queryHandlers } from './query.js';
import { remoteConfigHandlers } from './remote-config.js';
import { propertyDefinitionHandlers } from './property-definitions.js';
import { signupHandlers } from './signup.js';
import { userHandlers } from './users.js';
import { personHandlers } from '../persons/handlers.js';

/** The operations written by hand: all but the environments twins. */
const own = {
  ...metaHandlers,
  ...organizationHandlers,
  ...projectHandlers,
  ...userHandlers,
  ...personalApiKeyHandlers,
  ...dashboardHandlers,
  ...dashboardCollaboratorHandlers,
  ...dashboardSharingHandlers,
  ...domainHandlers,
  ...inviteHandlers,
  ...memberHandlers,
  ...signupHandlers,
  ...pipelinePluginHandlers,
  ...pluginConfigHandlers,
  ...eventDefinitionHandlers,
  ...propertyDefinitionHandlers,
  ...eventHandlers,
  ...queryHandlers,
  ...captureHandlers,
  ...remoteConfigHandlers,
  ...flagDefinitionHandlers,
  ...batchExportHandlers,
  ...batchExportRunHandlers,
  ...personHandlers,
};

/**
 * Every operation of the contract, keyed by operationId; `satisfies` makes a gap a compile error,
 * including a project operation without a handler (its environments twin would have none either).
 */
export const handlers = { ...own, ...environmentsHandlers(own) } satisfies AllHandlers;
