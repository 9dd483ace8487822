import type { FastifyReply, FastifyRequest } from 'fastify';
import type { operations } from '../../generated/api.js';

export type OperationId = keyof operations;
type Op<O extends OperationId> = operations[O];

type PathOf<O extends OperationId> = Op<O>['parameters'] extends { path: infer P } ? P : unknown;
type QueryOf<O extends OperationId> = Op<O>['parameters'] extends { query?: infer Q } ? NonNullable<Q> : unknown;
type BodyOf<O extends OperationId> = Op<O> extends { requestBody?: { content: infer C } }
  ? C extends { 'application/json': infer B }
    ? B
    : unknown
  : unknown;

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : void;
type Responses<O extends OperationId> = Op<O>['responses'];
type SuccessCodes<O extends OperationId> = Extract<keyof Responses<O>, 200 | 201 | 202 | 204>;

/** What a handler may return: the JSON body of one of its documented success responses. */
export type SuccessBody<O extends OperationId> = {
  [S in SuccessCodes<O>]: JsonOf<Responses<O>[S]>;
}[SuccessCodes<O>];

export type RequestOf<O extends OperationId> = FastifyRequest<{
  Params: PathOf<O>;
  Querystring: QueryOf<O>;
  Body: BodyOf<O>;
}>;

export type Handler<O extends OperationId> = (req: RequestOf<O>, reply: FastifyReply) => Promise<SuccessBody<O>>;

/** Every operation of the spec, each with its handler: a missing or unknown key is a compile error. */
export type AllHandlers = { [O in OperationId]: Handler<O> };
export type SomeHandlers = Partial<AllHandlers>;
