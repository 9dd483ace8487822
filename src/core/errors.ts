import type { components } from '../../generated/api.js';

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
    return new ApiError(
      401,
      'authentication_error',
      'not_authenticated',
      'Authentication credentials were not provided.',
    );
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
  static throttled(retryAfterSeconds: number, detail = 'Request was throttled.'): ApiError {
    return new ApiError(429, 'throttled_error', 'throttled', detail, null, {
      'retry-after': String(retryAfterSeconds),
    });
  }
  static unavailable(retryAfterSeconds = 1): ApiError {
    return new ApiError(
      503,
      'server_error',
      'service_unavailable',
      'The database is unavailable. Try again shortly.',
      null,
      {
        'retry-after': String(retryAfterSeconds),
      },
    );
  }
  /**
   * The database answers but cannot take the request now (out of connections, a contended write): nothing was
   * written.
   */
  /**
   * The request outran its deadline (`REQUEST_DEADLINE_SECONDS`): a database call never answered.
   * A write may still complete behind it, so the client should read before writing again.
   */
  static stalled(retryAfterSeconds = 1): ApiError {
    return new ApiError(
      503,
      'server_error',
      'service_unavailable',
      'The database did not answer in time; the request may or may not have taken effect. Try again shortly.',
      null,
      { 'retry-after': String(retryAfterSeconds) },
    );
  }
  static busy(retryAfterSeconds = 1): ApiError {
    return new ApiError(503, 'server_error', 'service_unavailable', 'The database is busy. Try again shortly.', null, {
      'retry-after': String(retryAfterSeconds),
    });
  }
}
