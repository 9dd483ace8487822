/** At most `size` tasks at once; the rest wait in arrival order. */
export class Limiter {
  private running = 0;
  private waiting: (() => void)[] = [];
  constructor(private size: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
