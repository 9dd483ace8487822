import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The longest a refused body is read and discarded before the connection is cut. */
export const UNREAD_BODY_LINGER_MS = 10_000;

/**
 * An answer sent before its request's body has arrived (a 413, a malformed body) must still reach the
 * client. Fastify marks such answers `Connection: close`, and Node then closes the socket while the
 * client is still sending: closing with unread input makes the kernel reset the connection, and a
 * client that reads only after sending its whole body (most do) gets the reset, not the answer. So
 * the connection stays open and the rest of the body is read and thrown away (Node dumps an unread
 * request body after the answer); a body still arriving after UNREAD_BODY_LINGER_MS is cut off.
 */
export async function keepReadingUnreadBody(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const raw = req.raw;
  // Only a request read from a real socket (not an injected one) has a body still on the wire.
  const socket = raw.socket as Socket | undefined;
  if (raw.complete !== false || raw.destroyed || typeof socket?.destroy !== 'function') return;
  if (String(reply.getHeader('connection') ?? '').toLowerCase() === 'close') reply.removeHeader('connection');
  const timer = setTimeout(() => {
    if (!raw.complete) socket.destroy();
  }, UNREAD_BODY_LINGER_MS).unref();
  raw.once('end', () => clearTimeout(timer));
  socket.once('close', () => clearTimeout(timer));
}
