// The listener's defences against clients that hold connections rather than send requests: slow
// bodies, too many sockets (in all, from one address, or past the process's open-file limit).
// Node's own deadlines are set as an operator would set them, and what Node does not offer
// (a per-route body deadline, a minimum body rate, connection caps) is enforced here.
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import { BlockList, isIPv6, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { ApiError } from '../core/errors.js';
import { AbortLog, type AbortCause } from './abort-log.js';
import { openFileLimit } from './fd-budget.js';

declare module 'fastify' {
  interface FastifyInstance {
    abortLog: AbortLog;
  }
}

/** How often bodies still arriving are checked against their deadline and the minimum rate. */
const SWEEP_MS = 500;
/** The most refused sockets left open at once to read their answer; past that, refused ones are just closed. */
const MAX_LINGERING = 256;
const LINGER_MS = 1_000;
/** The path answered on connections let in past the cap. */
const HEALTH_PATH = '/_health';

const HEALTH_ONLY = Symbol('healthOnly');
const CUT_OFF = Symbol('cutOff');
type TrackedSocket = Socket & { [HEALTH_ONLY]?: boolean; [CUT_OFF]?: boolean };

/** Whether the listener itself cut this connection off (and has counted it). */
export function wasCutOff(socket: Socket | undefined): boolean {
  return (socket as TrackedSocket | undefined)?.[CUT_OFF] === true;
}

/** A plain IPv4 address for one an IPv6 listener reports as IPv4-mapped. */
const plainAddress = (address: string | undefined) => (address ?? '').replace(/^::ffff:(?=\d+\.)/i, '');

/**
 * Whether a connection comes from a proxy `TRUST_PROXY` trusts: one it names by address or CIDR, or
 * any connection when it is a hop count (every client then reaches us through the proxies).
 */
function trustedPeers(trustProxy: string[] | number): (address: string) => boolean {
  if (typeof trustProxy === 'number') return () => true;
  const list = proxyList(trustProxy);
  return (address) => isTrusted(list, address);
}

/**
 * Fastify's `trustProxy`: `req.ip` is the forwarded client's only behind the proxies TRUST_PROXY names,
 * or past its count of hops. Fastify refuses a bare hop count (a client that reaches the server directly
 * could name its own address); an operator who sets one says every connection comes through the proxies,
 * so the count is applied as proxy-addr applies it: the nearest `hops` addresses are proxies.
 */
export function forwardedTrust(
  trustProxy: string[] | number,
): string[] | false | ((address: string, hop: number) => boolean) {
  if (typeof trustProxy === 'number') return (_address, hop) => hop < trustProxy;
  return trustProxy.length ? trustProxy : false;
}

/** Whether `TRUST_PROXY` is set at all. */
const behindProxies = (trustProxy: string[] | number) => typeof trustProxy === 'number' || trustProxy.length > 0;

function proxyList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const type = isIPv6(address) ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

function isTrusted(list: BlockList, address: string): boolean {
  try {
    return list.check(address, isIPv6(address) ? 'ipv6' : 'ipv4');
  } catch {
    return false;
  }
}

/** A refusal in PostHog's error shape, written straight to a socket no request was read from. */
function rawAnswer(error: ApiError): string {
  const body = JSON.stringify(error.body);
  const headers = Object.entries(error.headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return (
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n` +
    'Content-Type: application/json\r\n' +
    headers.join('') +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

const tooManyConnections = () =>
  new ApiError(503, 'server_error', 'service_unavailable', 'Too many open connections. Try again shortly.', null, {
    'retry-after': '1',
  });

const tooSlow = () => new ApiError(408, 'invalid_request', 'request_timeout', 'The request did not arrive in time.');

interface Arriving {
  req: IncomingMessage;
  socket: Socket;
  started: number;
  bytesAtStart: number;
  deadlineMs: number;
}

export interface ListenerLimits {
  /** The global connection cap after the open-file budget. */
  maxConnections: number;
  openFileLimit: number | undefined;
  reserve: number;
}

/** The connection cap the open-file limit allows: files for the pool, the reserve and the health slots kept back. */
export function connectionBudget(config: Config, limit = openFileLimit()): ListenerLimits {
  const reserve = config.fdReserve + config.databasePoolSize + config.healthConnections;
  const maxConnections =
    limit === undefined ? config.maxConnections : Math.max(1, Math.min(config.maxConnections, limit - reserve));
  return { maxConnections, openFileLimit: limit, reserve };
}

/**
 * Sets Node's deadlines and installs the connection caps, the body sweeper and the health-only
 * slots on the app's server. `isLongUpload(url)` names the routes that get the longer deadline.
 */
export function guardListener(app: FastifyInstance, config: Config, isLongUpload: (url: string) => boolean): void {
  const server = app.server as Server;
  const abortLog = new AbortLog(app.log, config.abortLogIntervalSeconds * 1000);
  app.decorate('abortLog', abortLog);
  const apiDeadlineMs = config.requestTimeoutSeconds * 1000;
  const uploadDeadlineMs = Math.max(apiDeadlineMs, config.captureRequestTimeoutSeconds * 1000);

  // Node's own deadlines are the backstop (checked only every connectionsCheckingInterval); the
  // sweeper below holds the tighter, per-route ones. Headers must arrive before the request's deadline.
  server.requestTimeout = uploadDeadlineMs + SWEEP_MS * 4;
  server.headersTimeout = Math.min(config.headersTimeoutSeconds * 1000, server.requestTimeout);
  server.keepAliveTimeout = config.keepAliveTimeoutSeconds * 1000;
  server.maxRequestsPerSocket = config.maxRequestsPerSocket;
  server.setTimeout(config.socketIdleTimeoutSeconds * 1000);

  const budget = connectionBudget(config);
  const fromProxy = trustedPeers(config.trustProxy);
  let open = 0;
  let lingering = 0;
  const perAddress = new Map<string, number>();

  const refuse = (socket: Socket, cause: AbortCause, address: string) => {
    abortLog.count(cause, { remoteAddress: address });
    if (lingering >= MAX_LINGERING) return void socket.destroy();
    // The answer is written and the client's request read and dropped, so the answer is not lost to a reset.
    lingering++;
    socket.on('error', () => {});
    socket.resume();
    socket.end(rawAnswer(tooManyConnections()));
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => {
      clearTimeout(timer);
      lingering--;
    });
  };

  // Runs after Node's own connection listener but before any byte is parsed, so a refused socket
  // never reaches a request handler.
  server.on('connection', (socket: TrackedSocket) => {
    const address = plainAddress(socket.remoteAddress);
    if (open >= budget.maxConnections + config.healthConnections) return refuse(socket, 'connection_cap', address);
    const capped = !fromProxy(address);
    const fromAddress = perAddress.get(address) ?? 0;
    if (capped && fromAddress >= config.maxConnectionsPerAddress) {
      return refuse(socket, 'address_connection_cap', address);
    }
    if (open >= budget.maxConnections) socket[HEALTH_ONLY] = true;
    open++;
    if (capped) perAddress.set(address, fromAddress + 1);
    socket.once('close', () => {
      open--;
      if (!capped) return;
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n > 0) perAddress.set(address, n);
      else perAddress.delete(address);
    });
  });

  // Bodies still arriving, checked every SWEEP_MS against their deadline and the minimum rate.
  const arriving = new Set<Arriving>();
  server.on('request', (req: IncomingMessage) => {
    if (req.complete) return;
    const socket = req.socket;
    const entry: Arriving = {
      req,
      socket,
      started: Date.now(),
      bytesAtStart: socket.bytesRead,
      deadlineMs: isLongUpload(req.url ?? '') ? uploadDeadlineMs : apiDeadlineMs,
    };
    arriving.add(entry);
    const done = () => arriving.delete(entry);
    req.once('end', done);
    req.once('close', done);
  });
  const graceMs = config.bodyRateGraceSeconds * 1000;
  const sweeper = setInterval(() => {
    const now = Date.now();
    for (const entry of arriving) {
      const { req, socket } = entry;
      if (req.complete || socket.destroyed) {
        arriving.delete(entry);
        continue;
      }
      const elapsed = now - entry.started;
      let cause: AbortCause | undefined;
      if (elapsed > entry.deadlineMs) cause = 'request_timeout';
      else if (config.bodyMinBytesPerSecond > 0 && elapsed > graceMs) {
        const rate = (socket.bytesRead - entry.bytesAtStart) / (elapsed / 1000);
        if (rate < config.bodyMinBytesPerSecond) cause = 'slow_body';
      }
      if (!cause) continue;
      arriving.delete(entry);
      abortLog.count(cause, { remoteAddress: plainAddress(socket.remoteAddress) });
      cutOff(socket);
    }
  }, SWEEP_MS);
  sweeper.unref();

  // A connection let in past the cap answers the health check and nothing else.
  app.addHook('onRequest', async (req, reply) => {
    if (!(req.raw.socket as TrackedSocket)[HEALTH_ONLY]) return;
    if (req.url.split('?')[0] === HEALTH_PATH) return;
    abortLog.count('health_only_connection', { remoteAddress: req.ip });
    const error = tooManyConnections();
    return reply.code(error.statusCode).headers(error.headers).header('connection', 'close').send(error.body);
  });

  // Behind a trusted proxy every client shares the proxy's connections: their open requests are
  // capped per forwarded address instead.
  if (behindProxies(config.trustProxy)) {
    const openRequests = new Map<string, number>();
    app.addHook('onRequest', async (req, reply) => {
      if (!fromProxy(plainAddress(req.raw.socket.remoteAddress))) return;
      const client = req.ip;
      const n = openRequests.get(client) ?? 0;
      if (n >= config.maxConnectionsPerAddress) {
        abortLog.count('forwarded_client_cap', { remoteAddress: client });
        const error = tooManyConnections();
        return reply.code(error.statusCode).headers(error.headers).send(error.body);
      }
      openRequests.set(client, n + 1);
      req.raw.once('close', () => {
        const left = (openRequests.get(client) ?? 1) - 1;
        if (left > 0) openRequests.set(client, left);
        else openRequests.delete(client);
      });
    });
  }

  app.addHook('onListen', async () => {
    app.log.info(
      {
        openFileLimit: budget.openFileLimit ?? 'unknown',
        maxConnections: budget.maxConnections,
        reservedFiles: budget.reserve,
        maxConnectionsPerAddress: config.maxConnectionsPerAddress,
      },
      budget.openFileLimit === undefined
        ? 'open-file limit unknown; connections capped by MAX_CONNECTIONS'
        : `open-file limit ${budget.openFileLimit}; connections capped at ${budget.maxConnections}`,
    );
  });
  app.addHook('onClose', async () => {
    clearInterval(sweeper);
    abortLog.stop();
  });
}

/**
 * Answers 408 in the error shape (when no answer has begun) and closes the connection: the rest of
 * the body is not waited for.
 */
function cutOff(socket: Socket): void {
  (socket as TrackedSocket)[CUT_OFF] = true;
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) socket.end(rawAnswer(tooSlow()));
  // A client that stops sending may not read either: the socket goes after a short linger regardless.
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
