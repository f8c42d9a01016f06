/**
 * Bounded concurrency: `mapLimit` for one list of tasks, and a `Limiter` that many independent
 * tasks share, so that the requests of a whole batch (every table's writes, pre-reads and status
 * updates) stay under one bound however the work is split.
 *
 *   const limiter = new Limiter(64);
 *   await Promise.all(tables.map((t) => limiter.run(() => writeOne(t))));   // at most 64 at once
 */

/** Maps with at most `limit` promises in flight, keeping result order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) {
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** A counting semaphore: at most `limit` calls of {@link run} are in progress at once, the rest wait in order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  /** The most calls that were ever in progress at once. */
  peak = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a limiter needs a positive integer bound, got ${limit}`);
  }

  /** Runs `fn` once a slot is free, and frees the slot when it settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    this.peak = Math.max(this.peak, this.active);
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  /** `fn` over every item, each call holding one slot; results in order. */
  map<T, R>(items: readonly T[], fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
    return Promise.all(items.map((item, i) => this.run(() => fn(item, i))));
  }
}
