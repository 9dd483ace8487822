import type { AllHandlers } from '../http/types.js';
import { captureHandlers } from '../capture/handlers.js';
import { dashboardCollaboratorHandlers } from '../dashboards/collaborator-handlers.js';
import { dashboardSharingHandlers } from '../dashboards/sharing-handlers.js';
import { dashboardHandlers } from '../dashboards/handlers.js';
import { insightHandlers } from '../insights/handlers.js';
import { insightSharingHandlers } from '../insights/sharing-handlers.js';
import { sharedHandlers } from '../sharing/handlers.js';
import { domainHandlers } from '../domains/handlers.js';
import { environmentsHandlers } from './environments.js';
import { eventDefinitionHandlers } from '../definitions/event-handlers.js';
import { eventHandlers } from '../events/handlers.js';
import { flagDefinitionHandlers } from '../remote-config/flag-handlers.js';
import { inviteHandlers } from '../invites/handlers.js';
import { memberHandlers } from '../members/handlers.js';
import { batchExportRunHandlers } from '../batch-exports/run-handlers.js';
import { batchExportHandlers } from '../batch-exports/handlers.js';
import { metaHandlers } from '../meta/handlers.js';
import { organizationHandlers } from '../organizations/handlers.js';
import { personalApiKeyHandlers } from '../personal-api-keys/handlers.js';
import { pipelinePluginHandlers } from '../plugins/pipeline-handlers.js';
import { pluginConfigHandlers } from '../plugins/config-handlers.js';
import { hogFunctionHandlers } from '../hog-functions/handlers.js';
import { projectHandlers } from '../projects/handlers.js';
import { queryHandlers } from '../query/handlers.js';
import { remoteConfigHandlers } from '../remote-config/handlers.js';
import { propertyDefinitionHandlers } from '../definitions/property-handlers.js';
import { signupHandlers } from '../invites/signup-handlers.js';
import { userHandlers } from '../users/handlers.js';
import { personHandlers } from '../persons/handlers.js';

/** The operations written by hand: all but the environments twins. */
const own = {
  ...metaHandlers,
  ...organizationHandlers,
  ...projectHandlers,
  ...userHandlers,
  ...personalApiKeyHandlers,
  ...dashboardHandlers,
  ...insightHandlers,
  ...dashboardCollaboratorHandlers,
  ...dashboardSharingHandlers,
  ...insightSharingHandlers,
  ...sharedHandlers,
  ...domainHandlers,
  ...inviteHandlers,
  ...memberHandlers,
  ...signupHandlers,
  ...pipelinePluginHandlers,
  ...pluginConfigHandlers,
  ...hogFunctionHandlers,
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
