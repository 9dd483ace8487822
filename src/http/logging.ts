import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';

/** Query parameters that carry credentials (PostHog accepts `?personal_api_key=`). */
const SECRET_QUERY = new Set(['personal_api_key', 'token', 'access_token', 'api_key', 'secret']);
/**
 * Path segments that are credentials themselves: a public dashboard's sharing token, and the invite
 * id of a sign-up link (whoever holds it can accept the invite).
 */
const SECRET_PATH = /^(\/shared\/|\/api\/signup\/)[^/?]+/i;
/** Personal API keys (`phx_`) and project tokens (`phc_`), wherever they appear, `_` percent-encoded or not. */
const KEY_VALUE = /(ph[xc])(?:_|%5F)[A-Za-z0-9%_-]+/gi;
const redactKeys = (text: string) => text.replace(KEY_VALUE, '$1_[redacted]');

/** The request URL as it may be logged: credentials in the query or the path replaced. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = redactKeys((q < 0 ? url : url.slice(0, q)).replace(SECRET_PATH, '$1[redacted]'));
  if (q < 0) return path;
  const parts = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=')[0] ?? '';
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {}
      return SECRET_QUERY.has(decoded) ? `${name}=[redacted]` : redactKeys(pair);
    });
  return `${path}?${parts.join('&')}`;
}

/** Drizzle puts a failed query's parameters in its message: they can hold tokens and secrets. */
function redactText(text: unknown): string {
  if (typeof text !== 'string') return '';
  return redactKeys(text.replace(/\nparams: [^\n]*/g, '\nparams: [redacted]')).replace(
    /(\/api\/signup\/)[^/?\s]+/gi,
    '$1[redacted]',
  );
}

interface LoggedError {
  [key: string]: unknown;
  type: string;
  message: string;
  stack: string;
  code?: unknown;
  cause?: LoggedError;
}

/** A thrown value that is not an Error (some libraries emit plain objects) as text, not "[object Object]". */
function describeValue(value: unknown): string {
  if (value === null || typeof value !== 'object') return String(value);
  try {
    return JSON.stringify(value).slice(0, 2000);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

export function serializeError(err: unknown, depth = 0): LoggedError {
  const e = (err ?? {}) as { name?: string; message?: unknown; stack?: unknown; code?: unknown; cause?: unknown };
  const out: LoggedError = {
    type: e.name ?? typeof err,
    message: redactText(typeof e.message === 'string' ? e.message : describeValue(err)),
    stack: redactText(e.stack),
  };
  if (e.code !== undefined) out.code = e.code;
  if (e.cause && depth < 3) out.cause = serializeError(e.cause, depth + 1);
  return out;
}

/**
 * Fastify's lines for each request ("incoming request", "request completed") at debug rather than
 * info: at the default level (info) the log holds what needs attention (errors, 503s, start and
 * stop), not every request. A request that errored is still logged at error.
 */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * Logger settings of the server. Key values never reach the log: the Authorization header is not
 * logged, a key or token in the URL is replaced, and errors lose the query parameters drizzle
 * copies into their messages.
 */
export function loggerOptions(level: string): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    serializers: {
      req(req: { method?: string; url?: string; host?: string; ip?: string; socket?: { remotePort?: number } }) {
        return {
          method: req.method,
          url: redactUrl(req.url ?? ''),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        };
      },
      err: (err: unknown) => serializeError(err),
    },
  };
}
