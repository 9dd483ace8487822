import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { components } from '../../generated/api.js';
import { validationErrorBody } from './validation-errors.js';

export type ErrorBody = components['schemas']['Error'];
type ErrorType = ErrorBody['type'];

/** The one way errors leave a handler: `throw ApiError.notFound()` and so on. Bodies are PostHog's. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly type: ErrorType,
    readonly code: string,
    readonly detail: string,
    readonly attr: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }

  get body(): ErrorBody {
    return { type: this.type, code: this.code, detail: this.detail, attr: this.attr };
  }

  static validation(attr: string | null, detail: string, code = 'invalid_input'): ApiError {
    return new ApiError(400, 'validation_error', code, detail, attr);
  }
  static required(attr: string): ApiError {
    return ApiError.validation(attr, 'This field is required.', 'required');
  }
  static invalidChoice(attr: string, value: unknown): ApiError {
    return ApiError.validation(attr, `"${String(value)}" is not a valid choice.`, 'invalid_choice');
  }
  static notAuthenticated(): ApiError {
    return new ApiError(401, 'authentication_error', 'not_authenticated', 'Authentication credentials were not provided.');
  }
  static authenticationFailed(detail = 'Personal API key found in request Authorization header is invalid.'): ApiError {
    return new ApiError(401, 'authentication_error', 'authentication_failed', detail);
  }
  static permissionDenied(detail = 'You do not have permission to perform this action.'): ApiError {
    return new ApiError(403, 'authentication_error', 'permission_denied', detail);
  }
  static notFound(detail = 'Not found.'): ApiError {
    return new ApiError(404, 'invalid_request', 'not_found', detail);
  }
  static methodNotAllowed(method: string): ApiError {
    return new ApiError(405, 'invalid_request', 'method_not_allowed', `Method "${method}" not allowed.`);
  }
  static throttled(retryAfterSeconds: number): ApiError {
    return new ApiError(429, 'throttled_error', 'throttled', 'Request was throttled.', null, {
      'retry-after': String(retryAfterSeconds),
    });
  }
  static unavailable(): ApiError {
    return new ApiError(503, 'server_error', 'service_unavailable', 'The database is unavailable. Try again shortly.');
  }
}

/** Errors that mean the database cannot be reached, as postgres.js and Node report them. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08003',
  '08006',
]);

function databaseCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  }
  return false;
}

export function toApiError(err: FastifyError | ApiError | Error): ApiError | undefined {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError;
  if (fe.validation) return validationErrorBody(fe.validation);
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'invalid_request', 'parse_error', `JSON parse error - ${fe.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'invalid_request', 'request_too_large', 'Request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'invalid_request', 'unsupported_media_type', fe.message);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, 'invalid_request', 'parse_error', 'Request body does not match its Content-Length.');
  }
  if (isDatabaseUnavailable(err)) return ApiError.unavailable();
  // A number the contract allows but a column cannot hold (an id past 2^31, a huge page).
  if (databaseCode(err) === '22003') return ApiError.validation(null, 'A numeric value is out of range.');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError(fe.statusCode, 'invalid_request', 'invalid_request', fe.message);
  }
  return undefined;
}

export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const apiError = toApiError(err);
  if (!apiError) {
    // Internals stay in the log; the client gets PostHog's generic body.
    req.log.error({ err }, 'unhandled error');
    void reply.code(500).send({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
    return;
  }
  if (apiError.statusCode === 503) req.log.warn({ err }, 'database unavailable');
  void reply.code(apiError.statusCode).headers(apiError.headers).send(apiError.body);
}
