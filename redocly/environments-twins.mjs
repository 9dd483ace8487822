// PostHog serves every project-scoped resource twice: under /api/projects/{project_id}/ and under
// /api/environments/{project_id}/. This decorator derives the second from the first at bundle time, so
// the contract has no hand-written twins and a project operation added anywhere gets its twin for free.
//
// The rule (openapi/README.md): the twin's path is the project path with `projects` replaced by
// `environments`; its operationId is `environments_` + the project operation's id, less a leading
// `projects_` (our project batch exports are `projects_batch_exports_*`, PostHog's twins are
// `environments_batch_exports_*`). Everything else (parameters, scope, bodies, responses) is the
// project operation's own, so a client sees one operation under two routes.

const PROJECT_PREFIX = '/api/projects/{project_id}/';
const ENVIRONMENTS_PREFIX = '/api/environments/{project_id}/';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
export const TWIN_TAG = 'environments';

/** The twin's operationId; src/operations/environments.ts states the same rule as a type. */
export function twinOperationId(projectOperationId) {
  return `environments_${projectOperationId.replace(/^projects_/, '')}`;
}

/** Adds the environments twins to a bundled document's `paths`; returns it. */
export function addEnvironmentTwins(root) {
  const twins = {};
  for (const [path, item] of Object.entries(root.paths ?? {})) {
    if (path.startsWith(ENVIRONMENTS_PREFIX)) {
      // openapi-typescript bundles the already bundled file again with this config: derived twins pass.
      if (METHODS.every((m) => !item[m] || item[m]['x-twin-of'])) continue;
      throw new Error(`${path}: environments routes are derived from the project ones; define ${path.replace(ENVIRONMENTS_PREFIX, PROJECT_PREFIX)} only`);
    }
    if (!path.startsWith(PROJECT_PREFIX)) continue;
    const twin = structuredClone(item);
    for (const method of METHODS) {
      const op = twin[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const of = op.operationId;
      op.operationId = twinOperationId(of);
      op.tags = [TWIN_TAG];
      if (op.summary) op.summary = `${op.summary} (environment route)`;
      op.description = `The same operation as \`${of}\` (${method.toUpperCase()} \`${path}\`), under PostHog's environment route: the same parameters, scope and answers.`;
      op['x-twin-of'] = of;
    }
    twins[path.replace(PROJECT_PREFIX, ENVIRONMENTS_PREFIX)] = twin;
  }
  Object.assign(root.paths, twins);
  return root;
}

export default function environmentsPlugin() {
  return {
    id: 'environments',
    decorators: {
      oas3: {
        // Root.leave runs after the bundler has inlined every path item, so the copies are complete.
        twins: () => ({ Root: { leave: (root) => void addEnvironmentTwins(root) } }),
      },
    },
  };
}
