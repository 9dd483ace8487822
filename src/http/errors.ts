import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.js';
import { ClientGone } from '../core/client-gone.js';
import { databaseError } from '../core/sql-state.js';
import { CommitOutcomeUnknown } from '../db/commit-outcome.js';
import { isConnectionLost } from '../db/connection-lost.js';
import { validationErrorBody } from './validation-errors.js';
import { wasCutOff } from './listener.js';

/**
 * SQLSTATEs that mean the server cannot take the request now but will: out of connections
 * (53300), out of memory or another resource (class 53), a lock or snapshot it gave up waiting for.
 * The statement did nothing, so a retry is safe.
 */
const BUSY_CODES = new Set(['53000', '53100', '53200', '53300', '53400', '55P03', '40001', '40P01', '57014']);

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
  if (err instanceof CommitOutcomeUnknown) return ApiError.stalled();
  if (isConnectionLost(err)) return ApiError.unavailable();
  const db = databaseError(err);
  if (db && BUSY_CODES.has(db.code)) return ApiError.busy();
  // A number the contract allows but a column cannot hold (an id past 2^31, a huge page).
  if (db?.code === '22003') return ApiError.validation(null, 'A numeric value is out of range.');
  // PostgreSQL's data exceptions (class 22) mean a value it was given cannot be what the query needs:
  // a date past year 294276, a fraction compared to an integer column, a NUL in text. Such values
  // come from the request, so the caller hears why (PostgreSQL's message, never the query's text)
  // instead of a server error.
  if (db?.code.startsWith('22')) return ApiError.validation(null, `Invalid value: ${db.message}`);
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError(fe.statusCode, 'invalid_request', 'invalid_request', fe.message);
  }
  return undefined;
}

/**
 * The request's body stopped arriving, or its answer could not be sent, because its connection closed
 * (the client left while its query ran, or the listener cut it off): nobody reads an answer, and it is
 * counted, not logged once per socket.
 */
function clientGone(err: FastifyError, req: FastifyRequest): boolean {
  if (err instanceof ClientGone) return true;
  const socket = req.raw.socket as Socket | undefined;
  if (err.code === 'ERR_STREAM_PREMATURE_CLOSE') return socket?.destroyed === true || req.raw.destroyed;
  return err.message === 'aborted' && err.code === 'ECONNRESET' && socket?.destroyed === true;
}

export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  if (clientGone(err, req)) {
    if (!wasCutOff(req.raw.socket)) req.server.abortLog?.count('client_gone');
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE' || err instanceof ClientGone) {
      // The answer had started on a socket that is gone: nothing more can be sent.
      reply.hijack();
      reply.raw.destroy();
      return;
    }
    void reply.code(400).send({ type: 'invalid_request', code: 'client_closed', detail: 'aborted', attr: null });
    return;
  }
  const apiError = toApiError(err);
  if (!apiError) {
    // Internals stay in the log; the client gets PostHog's generic body.
    req.log.error({ err }, 'unhandled error');
    void reply.code(500).send({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
    return;
  }
  // Refusals the abort log counts (a full decoder queue) are summed up there, not logged each.
  const counted = (apiError as { counted?: boolean }).counted === true;
  if (apiError.statusCode === 503 && !counted) req.log.warn({ err }, apiError.detail);
  void reply.code(apiError.statusCode).headers(apiError.headers).send(apiError.body);
}

/** How long a socket refused at the HTTP parser stays open after its answer, so the answer is not lost to a reset. */
const CLIENT_ERROR_LINGER_MS = 2_000;

/** The answer to a request the HTTP parser itself refused, by Node's error code. */
function clientErrorAnswer(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        431,
        'invalid_request',
        'request_header_fields_too_large',
        'Request header fields are too large.',
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'invalid_request', 'request_timeout', 'The request did not arrive in time.');
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_EOF_STATE':
      return new ApiError(400, 'invalid_request', 'parse_error', 'Request body does not match its Content-Length.');
    default:
      return new ApiError(400, 'invalid_request', 'parse_error', 'Malformed HTTP request.');
  }
}

/**
 * Requests Node's HTTP parser refuses (oversized headers, a bad or contradictory Content-Length, a
 * body cut short) never reach Fastify's error handler; this answers them in the error shape too.
 * Like Node's own handler it stays silent when an answer to an earlier request on the connection has
 * begun, since writing then would corrupt that answer. The socket is half-closed rather than
 * destroyed, so unread input does not make the kernel reset the connection before the answer arrives.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const answer = clientErrorAnswer(err.code);
  const body = JSON.stringify(answer.body);
  socket.end(
    `HTTP/1.1 ${answer.statusCode} ${STATUS_CODES[answer.statusCode]}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  const timer = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
  socket.once('close', () => clearTimeout(timer));
}
