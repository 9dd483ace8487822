import type { FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '../../generated/api.js';
import type { OperationPaths } from '../../generated/operation-paths.js';
import type { Sent } from './json-text.js';
import type { OrganizationTenant, ProjectTenant, Tenant } from '../core/tenant.js';

export type OperationId = keyof operations;
type Op<O extends OperationId> = operations[O];

type PathOf<O extends OperationId> = Op<O>['parameters'] extends { path: infer P } ? P : unknown;
type QueryOf<O extends OperationId> = Op<O>['parameters'] extends { query?: infer Q } ? NonNullable<Q> : unknown;
type BodyOf<O extends OperationId> =
  Op<O> extends { requestBody?: { content: infer C } }
    ? C extends { 'application/json': infer B }
      ? B
      : unknown
    : unknown;

// biome-ignore lint/suspicious/noConfusingVoidType: a 204 handler returns nothing, which TypeScript types as void
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : void;
type Responses<O extends OperationId> = Op<O>['responses'];
type SuccessCodes<O extends OperationId> = Extract<keyof Responses<O>, 200 | 201 | 202 | 204>;

/** What a handler may return: the JSON body of one of its documented success responses. */
export type SuccessBody<O extends OperationId> = {
  [S in SuccessCodes<O>]: JsonOf<Responses<O>[S]>;
}[SuccessCodes<O>];

/**
 * The tenant the authentication hook resolves for an operation, by its path as src/http/route-meta.ts
 * reads it: a project route always has `project_id`, an organization route never does. Other
 * operations keep the loose `Tenant` (they have none; a handler there must not read it).
 */
export type TenantOf<O extends OperationId> = O extends keyof OperationPaths
  ? OperationPaths[O] extends `/api/${'projects' | 'environments'}/{${string}}/${string}`
    ? ProjectTenant
    : OperationPaths[O] extends `/api/organizations/{${string}}/${string}`
      ? OrganizationTenant
      : Tenant
  : Tenant;

export type RequestOf<O extends OperationId> = FastifyRequest<{
  Params: PathOf<O>;
  Querystring: QueryOf<O>;
  Body: BodyOf<O>;
}> & { tenant: TenantOf<O> };

/** What a helper shared by several project operations takes. */
export type ProjectRequest = FastifyRequest & { tenant: ProjectTenant };

/** A handler answers its body, or sends JSON text of it itself (src/http/json-text.ts). */
export type Handler<O extends OperationId> = (
  req: RequestOf<O>,
  reply: FastifyReply,
) => Promise<SuccessBody<O> | Sent<SuccessBody<O>>>;

/** Every operation of the spec, each with its handler: a missing or unknown key is a compile error. */
export type AllHandlers = { [O in OperationId]: Handler<O> };
export type SomeHandlers = Partial<AllHandlers>;
