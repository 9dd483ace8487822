import type { operations } from '../../generated/api.js';
import type { Handler, OperationId } from '../http/types.js';
import { spec } from '../http/spec.js';

/**
 * PostHog's `/api/environments/{project_id}/...` routes. The contract derives one twin per project
 * operation at bundle time (redocly/environments-twins.mjs); here each twin is bound to its project
 * operation's handler, so the two routes run the same code under the same scope and tenant rule.
 */
export type EnvironmentsOperationId = Extract<OperationId, `environments_${string}`>;

/** The bundler's naming rule as a type: `environments_x` is the twin of `projects_x` when that exists, else of `x`. */
export type TwinOf<E extends EnvironmentsOperationId> = E extends `environments_${infer R}`
  ? `projects_${R}` extends OperationId
    ? `projects_${R}`
    : R extends OperationId
      ? R
      : never
  : never;

export type ProjectOperationId = TwinOf<EnvironmentsOperationId>;

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;

/**
 * Compile-time checks: every twin names an existing project operation, and both have the same
 * parameters, body and responses (so one handler is type-correct for both). A failing twin shows up
 * by name in the error on `twinsAgree` below.
 */
type Disagreeing = {
  [E in EnvironmentsOperationId]: [TwinOf<E>] extends [never]
    ? E
    : Equal<operations[E], operations[TwinOf<E>]> extends true
      ? never
      : E;
}[EnvironmentsOperationId];
const twinsAgree: [Disagreeing] extends [never] ? true : { twinsThatDisagree: Disagreeing } = true;
void twinsAgree;

export type ProjectHandlers = { [P in ProjectOperationId]: Handler<P> };
export type TwinHandlers = { [E in EnvironmentsOperationId]: Handler<E> };

/** The twins' operationIds with their project operation's, as the bundled contract records them (`x-twin-of`). */
export function twinPairs(): [EnvironmentsOperationId, ProjectOperationId][] {
  return Object.values(spec.paths).flatMap((item) =>
    Object.values(item)
      .filter((op) => typeof op === 'object' && op && typeof op['x-twin-of'] === 'string')
      .map((op): [EnvironmentsOperationId, ProjectOperationId] => [
        op.operationId as EnvironmentsOperationId,
        op['x-twin-of'] as ProjectOperationId,
      ]),
  );
}

/** Every environments operation, bound to its project operation's handler. */
export function environmentsHandlers(project: ProjectHandlers): TwinHandlers {
  const twins: Partial<Record<EnvironmentsOperationId, unknown>> = {};
  for (const [twin, of] of twinPairs()) {
    const handler = project[of];
    if (typeof handler !== 'function') throw new Error(`No handler for ${of}, the project operation of ${twin}`);
    twins[twin] = handler;
  }
  // The types above prove each twin's handler type equals its project operation's.
  return twins as TwinHandlers;
}
