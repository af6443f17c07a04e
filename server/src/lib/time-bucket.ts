// Milliseconds of work each key (tenant) may spend per second, as token buckets: a burst up to
// `capacity`, refilled at `perSecond`. Hand-written: rate-limiter-flexible counts requests, not
// the variable cost of each one charged after the fact, which is what a render budget needs.
// Buckets that are full are dropped, so idle tenants cost no memory.

export class TimeBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly capacity: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  private refill(key: string): { tokens: number; at: number } {
    const t = this.now();
    const b = this.buckets.get(key) ?? { tokens: this.capacity, at: t };
    b.tokens = Math.min(this.capacity, b.tokens + ((t - b.at) / 1000) * this.perSecond);
    b.at = t;
    return b;
  }

  /** What the key may spend now (0 when its bucket is empty). */
  available(key: string): number {
    return Math.max(0, this.refill(key).tokens);
  }

  /** Charges what was spent (the bucket may go below zero, and refills from there). */
  charge(key: string, ms: number): void {
    const b = this.refill(key);
    b.tokens -= ms;
    if (b.tokens >= this.capacity) this.buckets.delete(key);
    else this.buckets.set(key, b);
    if (this.buckets.size > 10_000) this.prune();
  }

  private prune(): void {
    for (const key of [...this.buckets.keys()]) if (this.refill(key).tokens >= this.capacity) this.buckets.delete(key);
  }
}
