import type { AllHandlers } from '../http/types.js';
import { batchExportRunHandlers } from './batch-export-runs.js';
import { batchExportHandlers } from './batch-exports.js';
import { metaHandlers } from './meta.js';
import { organizationHandlers } from './organizations.js';
import { personalApiKeyHandlers } from './personal-api-keys.js';
import { projectHandlers } from './projects.js';
import { userHandlers } from './users.js';

/** Every operation of the contract, keyed by operationId; `satisfies` makes a gap a compile error. */
export const handlers = {
  ...metaHandlers,
  ...organizationHandlers,
  ...projectHandlers,
  ...userHandlers,
  ...personalApiKeyHandlers,
  ...batchExportHandlers,
  ...batchExportRunHandlers,
} satisfies AllHandlers;
