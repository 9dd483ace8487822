import net from 'node:net';

/**
 * Whether PostgreSQL answers, learnt from the driver's own connection attempts. While it does not,
 * requests are refused at once (503) instead of queueing behind connection attempts that each wait
 * for a timeout and a growing back-off; one request per interval still goes through as a probe, and
 * the first connection that gets an answer ends the outage.
 */
export class Reachability {
  private downSince: number | undefined;
  private lastProbe = 0;

  constructor(private probeEveryMs = 1_000) {}

  up(): void {
    this.downSince = undefined;
  }

  down(now = Date.now()): void {
    this.downSince ??= now;
  }

  admit(now = Date.now()): boolean {
    if (this.downSince === undefined) return true;
    if (now - this.lastProbe < this.probeEveryMs) return false;
    this.lastProbe = now;
    return true;
  }
}

/**
 * postgres.js options for plain TCP to one host (TLS and Unix sockets keep the driver's own sockets).
 * A server that accepts a connection and closes it before answering (a proxy or port forwarder whose
 * database is down) would make the driver retry without end and without failing the waiting query,
 * so such a close counts as an error. Every attempt also tells `reach` whether the server answered.
 */
export function tcpSocketOptions(
  url: string,
  reach: Reachability,
): { socket?: (o: { host: string[]; port: number[] }) => net.Socket } {
  const u = new URL(url);
  if (/ssl|host=/.test(u.search) || u.hostname.includes(',') || !u.hostname) return {};
  return {
    socket({ host, port }) {
      const socket = net.connect(port[0] ?? 5432, host[0] ?? 'localhost');
      // The driver listens too; this one only keeps a late error from being an uncaught exception.
      socket.on('error', () => {});
      let answered = false;
      // A connection that carries a CancelRequest is closed by the server without an answer, as the protocol
      // says: that is its success, not an outage.
      let cancelling = false;
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = ((chunk: unknown, ...rest: unknown[]) => {
        if (!answered && isCancelRequest(chunk)) cancelling = true;
        return write(chunk, ...rest);
      }) as typeof socket.write;
      socket.once('data', () => {
        answered = true;
        reach.up();
      });
      socket.once('close', () => {
        if (!answered && !cancelling) reach.down();
      });
      socket.once('end', () => {
        if (cancelling) return;
        socket.destroy(Object.assign(new Error('The database server closed the connection'), { code: 'ECONNRESET' }));
      });
      return socket;
    },
  };
}

/** The protocol's CancelRequest: length 16, then the code 80877102, then the backend's pid and secret key. */
function isCancelRequest(chunk: unknown): boolean {
  return (
    Buffer.isBuffer(chunk) && chunk.length === 16 && chunk.readInt32BE(0) === 16 && chunk.readInt32BE(4) === 80877102
  );
}
