import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    inFlight: InFlight;
  }
}

/**
 * Requests whose handler has not finished. Fastify's close() resolves once the connections are gone,
 * but a request whose client hung up keeps running its handler after that; the database must stay
 * open until it is done, or its next query fails.
 */
export class InFlight {
  private count = 0;
  private counted = new WeakSet<FastifyRequest>();
  private waiters: (() => void)[] = [];

  start(req: FastifyRequest): void {
    this.counted.add(req);
    this.count++;
  }

  /** Called once the reply is being sent: the handler's work is done by then. */
  finish(req: FastifyRequest): void {
    if (!this.counted.delete(req)) return;
    if (--this.count === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves when no handler is running, or after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<void> {
    if (this.count === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.waiters.push(resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }
}

export function trackInFlight(app: FastifyInstance): void {
  const inFlight = new InFlight();
  app.decorate('inFlight', inFlight);
  app.addHook('onRequest', async (req) => inFlight.start(req));
  app.addHook('onSend', async (req) => inFlight.finish(req));
}
