// Raw client sockets for the listener tests: slow bodies and floods, written byte by byte.
import { connect, type Socket } from 'node:net';

export interface RawClient {
  socket: Socket;
  /** Everything the server wrote. */
  received(): string;
  /** Resolves when the server (or anything) closed the socket, with the time it took since opening. */
  closed: Promise<number>;
}

export function openRaw(base: string, localAddress?: string): Promise<RawClient> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const opened = Date.now();
    const socket = connect({ host: url.hostname, port: Number(url.port), localAddress });
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (data += d));
    socket.on('error', () => {});
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now() - opened)));
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

/**
 * Sends a request's headers and the first byte of a `length`-byte body, then `chunk` every
 * `everyMs` until the socket closes: a slow-body client.
 */
export function trickle(
  client: RawClient,
  path: string,
  length: number,
  everyMs: number,
  headers: Record<string, string> = {},
  chunk = ' ',
): void {
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  client.socket.write(
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${extra.join('')}` +
      `Content-Length: ${length}\r\n\r\n[`,
  );
  const timer = setInterval(() => {
    if (client.socket.destroyed || !client.socket.writable) return clearInterval(timer);
    client.socket.write(chunk);
  }, everyMs);
  void client.closed.then(() => clearInterval(timer));
}

/** The status of the first answer a raw socket received, and its JSON body. */
export function firstAnswer(text: string): { status: number; body: unknown } | undefined {
  const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
  if (!status) return undefined;
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  try {
    return { status: Number(status), body: JSON.parse(body) };
  } catch {
    return { status: Number(status), body };
  }
}
