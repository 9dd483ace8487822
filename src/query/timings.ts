import { performance } from 'node:perf_hooks';

/** PostHog's `timings` entry: a step's key and its duration in seconds. */
export interface QueryTiming {
  k: string;
  t: number;
}

/**
 * The query pipeline's step durations in PostHog's shape: keys nest under `.` (the whole query) as
 * PostHog's HogQLTimings name them (`./parse`), steps come in the order they finished and `.` last.
 */
export class Timings {
  private readonly started = performance.now();
  private readonly steps = new Map<string, number>();

  /** Runs `fn` as step `key`; a step run twice adds up. */
  measure<T>(key: string, fn: () => T): T {
    const start = performance.now();
    const done = () => this.steps.set(`./${key}`, (this.steps.get(`./${key}`) ?? 0) + performance.now() - start);
    let result: T;
    try {
      result = fn();
    } catch (err) {
      done();
      throw err;
    }
    if (result instanceof Promise) return result.finally(done) as T;
    done();
    return result;
  }

  list(): QueryTiming[] {
    const seconds = (ms: number) => ms / 1000;
    return [
      ...[...this.steps].map(([k, ms]) => ({ k, t: seconds(ms) })),
      { k: '.', t: seconds(performance.now() - this.started) },
    ];
  }
}
