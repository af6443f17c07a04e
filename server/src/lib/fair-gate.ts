// Concurrency slots shared fairly between keys (tenants): at most `total` holders at once and at
// most `perKey` of one key; a freed slot goes to the next key in turn that has a waiter, so one
// key with a hundred callers queued does not stand in front of another key's single one. Written
// here because p-limit and its kin keep one FIFO queue (first come, first served across all
// keys), which is exactly the unfairness this exists to prevent.

interface Waiter {
  grant: () => void;
}

export class GateTimeoutError extends Error {}

export class FairGate {
  private active = 0;
  private readonly held = new Map<string, number>();
  /** Keys with waiters; each key's waiters in arrival order. */
  private readonly queues = new Map<string, Waiter[]>();
  /** When each key holding or awaiting a slot was last granted one (a count of grants): the least recent is served first. */
  private readonly lastServed = new Map<string, number>();
  private grants = 0;

  constructor(private readonly limits: { total: number; perKey: number }) {}

  /** Slots in use, and callers waiting (metrics, tests). */
  get stats(): { active: number; waiting: number } {
    let waiting = 0;
    for (const q of this.queues.values()) waiting += q.length;
    return { active: this.active, waiting };
  }

  /**
   * Waits for a slot for `key` (at most `timeoutMs`, then GateTimeoutError) and answers the
   * function that gives it back; call it exactly once.
   */
  async acquire(key: string, timeoutMs: number): Promise<() => void> {
    if (!this.queues.has(key) && this.free(key)) {
      this.take(key);
      return this.releaser(key);
    }
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.remove(key, waiter);
        reject(new GateTimeoutError(`no slot within ${timeoutMs} ms`));
      }, timeoutMs);
      const q = this.queues.get(key);
      if (q) q.push(waiter);
      else this.queues.set(key, [waiter]);
    });
    return this.releaser(key);
  }

  private free(key: string): boolean {
    return this.active < this.limits.total && (this.held.get(key) ?? 0) < this.limits.perKey;
  }

  private take(key: string): void {
    this.active++;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
    this.lastServed.set(key, ++this.grants);
  }

  /** Forgets a key that neither holds nor awaits a slot. */
  private forget(key: string): void {
    if (!this.held.has(key) && !this.queues.has(key)) this.lastServed.delete(key);
  }

  private releaser(key: string): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
      const n = (this.held.get(key) ?? 1) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
      this.dispatch();
      this.forget(key);
    };
  }

  private remove(key: string, waiter: Waiter): void {
    const q = this.queues.get(key);
    if (!q) return;
    const i = q.indexOf(waiter);
    if (i >= 0) q.splice(i, 1);
    if (q.length === 0) {
      this.queues.delete(key);
      this.forget(key);
    }
  }

  /**
   * Grants free slots to waiting keys in turn: of the keys that may take one, the one served
   * least recently (never, first), so a key that was just granted a slot, even at once without
   * waiting, goes behind every other key that waits.
   */
  private dispatch(): void {
    while (this.active < this.limits.total) {
      let next: string | null = null;
      for (const key of this.queues.keys()) {
        if (this.free(key) && (next === null || (this.lastServed.get(key) ?? 0) < (this.lastServed.get(next) ?? 0))) next = key;
      }
      if (next === null) return;
      const q = this.queues.get(next)!;
      const waiter = q.shift()!;
      if (q.length === 0) this.queues.delete(next);
      this.take(next);
      waiter.grant();
    }
  }
}
