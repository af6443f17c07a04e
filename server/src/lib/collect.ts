// Major garbage collections on request, for memory that lives outside V8's heap. A compiled
// agent's router is held in buffers (external memory); V8 frees an evicted one only at a major
// collection, which it starts by itself once external memory has grown by about 64 MiB since the
// last. For a cache bounded in bytes (ROUTER_CACHE_MB) that is up to 64 MiB of evicted routers held
// past its bound. No library asks V8 for a collection: the server starts with --expose-gc (npm
// start and serve, the image, the tests), and its `gc` is asked for a concurrent collection, which
// marks beside the event loop and pauses it only to finish. Without the flag nothing is collected
// on request (the server says so when it starts); V8's flags are never switched at run time, which
// Node's documentation warns may crash the process.

type Gc = (options: { type: 'major'; execution: 'async' }) => Promise<void>;

/** V8's `gc`, when the process was started with --expose-gc. */
function v8Gc(): Gc | null {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? (gc as Gc) : null;
}

/** Whether collections can be asked for (the process was started with --expose-gc). */
export const canCollect = (): boolean => v8Gc() !== null;

/** A full collection now, on this thread (a training worker's, between trainings); nothing without --expose-gc. */
export function collectNow(): void {
  (v8Gc() as (() => void) | null)?.();
}

let running: Promise<void> | null = null;

/** Starts a concurrent major collection, unless one is under way; resolves once it has finished (at once where V8 offers none). */
export function collectGarbage(): Promise<void> {
  const collect = v8Gc();
  if (!collect) return Promise.resolve();
  running ??= Promise.resolve(collect({ type: 'major', execution: 'async' })).finally(() => (running = null));
  return running;
}

/**
 * Watches a cache whose entries hold buffers: after every `checkEvery` bytes it lets go of, it
 * compares the memory all buffers hold (`process.memoryUsage().arrayBuffers`) with what the cache
 * still holds, and asks for a collection when the difference, evicted buffers V8 has not freed
 * yet among it, exceeds `slack`. Evicted buffers that a minor collection already freed cost
 * nothing, so a collection is asked for only when memory shows it is needed.
 */
export class ReleasedBytes {
  private pending = 0;
  /** Collections asked for. */
  collections = 0;

  constructor(
    private readonly opts: {
      /** Bytes the cache holds now. */
      held: () => number;
      /** Buffer memory beyond the cache's allowed before a collection is asked for. */
      slack: number;
      /** Bytes let go of between two looks at memory. */
      checkEvery: number;
      /** Buffer memory of the process (process.memoryUsage().arrayBuffers). */
      buffers?: () => number;
      collect?: () => Promise<void>;
    },
  ) {}

  add(bytes: number): void {
    this.pending += bytes;
    if (this.pending < this.opts.checkEvery) return;
    this.pending = 0;
    const buffers = this.opts.buffers?.() ?? process.memoryUsage().arrayBuffers;
    if (buffers - this.opts.held() <= this.opts.slack) return;
    this.collections++;
    void (this.opts.collect ?? collectGarbage)();
  }
}
