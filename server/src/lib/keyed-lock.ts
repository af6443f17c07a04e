// A first-come-first-served async lock per key, for work that must not interleave in one process.
// Hand-written: a promise chain per key is all this needs, and it allocates nothing for idle keys
// (the map entry goes when the last waiter finishes), which matters with millions of conversations.

export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /**
   * Runs `fn` holding every key: taken one by one in sorted order, so that two callers holding
   * overlapping sets cannot each wait for the other.
   */
  runAll<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const from = (i: number): Promise<T> => (i === sorted.length ? fn() : this.run(sorted[i], () => from(i + 1)));
    return from(0);
  }

  /** Whether a call holds `key` or waits for it. */
  isHeld(key: string): boolean {
    return this.tails.has(key);
  }

  get size(): number {
    return this.tails.size;
  }
}
