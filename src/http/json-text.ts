import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Page } from '../core/paging.js';
import type { JsonText } from '../core/json-text.js';
import { paginated } from './pagination.js';

declare const body: unique symbol;

/** A reply already sent with a body of schema `T`: what a handler that sends JSON text returns. */
export type Sent<T> = FastifyReply & { readonly [body]?: T };

/** Sends the text as it is: Fastify serializes no string sent as JSON. */
export function sendJsonText<T>(reply: FastifyReply, text: JsonText<T>): Sent<T> {
  return reply.type('application/json; charset=utf-8').send(text);
}

/** DRF's limit/offset page around objects already written as JSON. */
export function jsonPage<T>(req: FastifyRequest, page: Page, count: number, items: JsonText<T>[]) {
  const { next, previous } = paginated(req, page, count, []);
  const links = `"next":${JSON.stringify(next)},"previous":${JSON.stringify(previous)}`;
  return `{"count":${count},${links},"results":[${items.join(',')}]}` as JsonText<{
    count: number;
    next: string | null;
    previous: string | null;
    results: T[];
  }>;
}
