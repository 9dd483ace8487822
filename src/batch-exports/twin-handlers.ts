import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Handler, OperationId, RequestOf, SuccessBody } from '../http/types.js';

/**
 * Batch exports are served at organization and project scope with the same operations; only the
 * tenant path parameter differs. One implementation, typed by the project operation without its
 * tenant parameter, serves both operationIds; `twins` refuses to compile when the two operations'
 * other path parameters, query, body or success bodies differ.
 */
type OwnParams<O extends OperationId> = Omit<RequestOf<O>['params'], 'project_id' | 'organization_id'>;

export type TwinRequest<P extends OperationId> = FastifyRequest<{
  Params: OwnParams<P>;
  Querystring: RequestOf<P>['query'];
  Body: RequestOf<P>['body'];
}>;
export type TwinHandler<P extends OperationId> = (req: TwinRequest<P>, reply: FastifyReply) => Promise<SuccessBody<P>>;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Agree<P extends OperationId, O extends OperationId> =
  Same<OwnParams<P>, OwnParams<O>> extends true
    ? Same<RequestOf<P>['query'], RequestOf<O>['query']> extends true
      ? Same<RequestOf<P>['body'], RequestOf<O>['body']> extends true
        ? Same<SuccessBody<P>, SuccessBody<O>>
        : false
      : false
    : false;

/** `{[project]: impl, [organization]: impl}`; a compile error names the pair when they disagree. */
export function twins<P extends OperationId, O extends OperationId>(
  project: P,
  organization: O,
  impl: TwinHandler<P>,
  ..._agree: Agree<P, O> extends true ? [] : [`${P} and ${O} differ`]
): { [K in P]: Handler<P> } & { [K in O]: Handler<O> } {
  // Sound by `Agree`: both operations' requests carry what `impl` reads, and it answers both.
  const handler = impl as unknown as Handler<P> & Handler<O>;
  return { [project]: handler, [organization]: handler } as { [K in P]: Handler<P> } & { [K in O]: Handler<O> };
}
