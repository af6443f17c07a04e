// Router training off the event loop: a small pool of worker threads, each training within a
// time limit (the worker is ended, and a fresh one started, when it runs over) and a memory
// budget (refused before allocating; V8's heap limit as the backstop), and at most one training
// per tenant at a time, so one tenant's large definitions queue behind each other, not in
// front of everyone else's. Large trainings (more than LARGE_EXAMPLES examples, seconds of work)
// may hold all workers but one: a small definition never waits behind large ones. Background
// trainings (nobody waits for them) count as large, have a turn of their own per tenant, and take
// a worker only when no foreground training is waiting.
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../lib/worker-thread.js';
import { TrainingBudgetError } from '../../errors.js';
import { KeyedLock } from '../../lib/keyed-lock.js';
import { loadRouter, Router, type DenseTable, type RoutableCapability } from '../../engine/router/index.js';
import type { WordVectors } from '../../engine/word-vectors.js';
import type { TrainRequest } from './training-worker.js';

export interface TrainingBudget {
  timeoutMs: number;
  memoryMb: number;
  workers: number;
  /** How long a worker waits idle before it is ended (its heap returned); WORKER_IDLE_MS by default. */
  idleMs?: number;
  /** The worker's script (tests give one whose trainings block); the training worker by default. */
  workerUrl?: URL;
}

/**
 * A worker's heap keeps the peak of its last training (often more than the router it produced)
 * for as long as the worker lives; an idle worker is therefore ended after this long, and the next
 * training starts a fresh one (about a tenth of a second). Back-to-back trainings reuse it.
 */
const WORKER_IDLE_MS = 5_000;

/**
 * `background`: nobody waits for this training (a router of server embeddings, a stored router
 * trained again by a newer model). It never delays the tenant's own `PUT`s (it has a turn of its
 * own per tenant), and takes a worker only after every waiting foreground training, within the
 * large trainings' share.
 */
export type Trainer = (
  tenantId: string,
  caps: RoutableCapability[],
  outOfScope: string | null,
  vectors: boolean | DenseTable,
  opts?: { background?: boolean },
) => Promise<Router>;

// From TypeScript sources the worker registers tsx itself (training-boot.mjs); built, it is plain JavaScript.
const workerUrl = import.meta.url.endsWith('.ts') ? new URL('./training-boot.mjs', import.meta.url) : new URL('./training-worker.js', import.meta.url);

/**
 * A worker's young generation. Training allocates little that dies young (its arrays live for the
 * whole training), so a small one costs no time and keeps the process smaller while it trains:
 * three CLINC150 trainings with word vectors in a row peaked 50–80 MiB lower at 8 MiB than at 64
 * and took 1% longer (docs/performance.md, "Memory").
 */
const WORKER_YOUNG_MB = 8;

/** A definition with more examples than this trains for seconds: it may not take the last free worker. */
const LARGE_EXAMPLES = 2_000;

interface Slot {
  worker: Worker;
  /** Resolves when the worker has loaded (its start-up does not count against a training's time). */
  ready: Promise<void>;
  busy: boolean;
  /** Ends the worker once it has been idle for the budget's idleMs. */
  idle?: NodeJS.Timeout;
}

export class TrainingPool {
  private readonly slots: Slot[] = [];
  /** Trainings waiting for a worker: small, large and background apart; each tenant has at most one of each kind waiting. */
  private readonly waiting: { small: ((slot: Slot) => void)[]; large: ((slot: Slot) => void)[]; background: ((slot: Slot) => void)[] } = {
    small: [],
    large: [],
    background: [],
  };
  private largeBusy = 0;
  private readonly perTenant = new KeyedLock();
  private nextId = 1;
  private closed = false;
  private readonly running = new Map<string, number>();

  constructor(
    private readonly budget: TrainingBudget,
    /** The app's word vectors, shared with the workers. */
    private readonly words: WordVectors | null = null,
  ) {}

  private spawn(): { worker: Worker; ready: Promise<void> } {
    return startWorker(this.budget.workerUrl ?? workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: this.budget.memoryMb, maxYoungGenerationSizeMb: WORKER_YOUNG_MB },
      // The app's word vectors: SharedArrayBuffers, shared with the worker rather than copied.
      workerData: { vectors: this.words?.share() ?? null },
    });
  }

  /** Workers large trainings may hold at once: all but one (all, with a single worker). */
  private get largeShare(): number {
    return Math.max(1, this.budget.workers - 1);
  }

  /** A worker for a training; large and background ones (`large`) within the large share, background ones (`queue`) served last. */
  private acquire(large: boolean, queue: 'small' | 'large' | 'background'): Promise<Slot> {
    const take = (slot: Slot): Slot => {
      if (large) this.largeBusy++;
      return slot;
    };
    if (!large || this.largeBusy < this.largeShare) {
      const free = this.slots.find((s) => !s.busy);
      if (free) {
        clearTimeout(free.idle);
        free.busy = true;
        return Promise.resolve(take(free));
      }
      if (this.slots.length < this.budget.workers) {
        const slot = { ...this.spawn(), busy: true };
        this.slots.push(slot);
        return Promise.resolve(take(slot));
      }
    }
    return new Promise((resolve) => this.waiting[queue].push((slot) => resolve(take(slot))));
  }

  private release(slot: Slot, broken: boolean, large: boolean): void {
    if (large) this.largeBusy--;
    if (broken) {
      void slot.worker.terminate();
      Object.assign(slot, this.spawn());
    }
    // Small trainings first; a large one only while large ones hold less than their share.
    const next = this.waiting.small.shift() ?? (this.largeBusy < this.largeShare ? (this.waiting.large.shift() ?? this.waiting.background.shift()) : undefined);
    if (next) {
      next(slot);
      return;
    }
    slot.busy = false;
    slot.idle = setTimeout(() => {
      if (slot.busy) return;
      this.slots.splice(this.slots.indexOf(slot), 1);
      void slot.worker.terminate();
    }, this.budget.idleMs ?? WORKER_IDLE_MS);
    slot.idle.unref();
  }

  /** Worker threads alive, busy or idle. */
  get workers(): number {
    return this.slots.length;
  }

  /**
   * Trains in a worker; one training per tenant at a time, FIFO (and one background training per
   * tenant beside it); small definitions ahead of large ones, background trainings last.
   */
  readonly train: Trainer = (tenantId, caps, outOfScope, vectors, opts = {}) => {
    const turn = opts.background ? `background:${tenantId}` : tenantId;
    return this.perTenant.run(turn, async () => {
      if (this.closed) throw new Error('the training pool is closed');
      this.running.set(turn, (this.running.get(turn) ?? 0) + 1);
      const large = opts.background === true || caps.reduce((n, c) => n + c.examples.length, 0) > LARGE_EXAMPLES;
      const slot = await this.acquire(large, opts.background ? 'background' : large ? 'large' : 'small').catch((err: unknown) => {
        this.done(turn);
        throw err;
      });
      const id = this.nextId++;
      let broken = false;
      try {
        try {
          await slot.ready;
        } catch (err) {
          broken = true;
          throw err;
        }
        return await new Promise<Router>((resolve, reject) => {
          const w = slot.worker;
          const done = () => {
            clearTimeout(timer);
            w.off('message', onMessage);
            w.off('error', onError);
            w.off('exit', onExit);
          };
          const timer = setTimeout(() => {
            done();
            broken = true;
            reject(new TrainingBudgetError(`training this router took longer than ${this.budget.timeoutMs} ms; use fewer examples or capabilities`));
          }, this.budget.timeoutMs);
          const onMessage = (m: { id: number; state?: Uint8Array; error?: string; tooLarge?: boolean }) => {
            if (m.id !== id) return;
            done();
            if (m.state) resolve(loadRouter(Buffer.from(m.state.buffer, m.state.byteOffset, m.state.byteLength), this.words));
            else if (m.tooLarge) reject(new TrainingBudgetError(m.error!));
            else reject(new Error(m.error));
          };
          const onError = (err: Error & { code?: string }) => {
            done();
            broken = true;
            reject(
              err.code === 'ERR_WORKER_OUT_OF_MEMORY'
                ? new TrainingBudgetError(`training this router needs more than ${this.budget.memoryMb} MiB; use fewer examples or capabilities`)
                : err,
            );
          };
          const onExit = () => onError(Object.assign(new Error('the training worker stopped'), { code: 'ERR_WORKER_EXITED' }));
          w.on('message', onMessage);
          w.once('error', onError);
          w.once('exit', onExit);
          const req: TrainRequest = { id, caps, outOfScope, vectors, maxBytes: this.budget.memoryMb * 1048576 };
          w.postMessage(req);
        });
      } finally {
        this.release(slot, broken, large);
        this.done(turn);
      }
    });
  };

  private done(tenantId: string): void {
    const n = (this.running.get(tenantId) ?? 1) - 1;
    if (n > 0) this.running.set(tenantId, n);
    else this.running.delete(tenantId);
  }

  /** Trainings under way or waiting for a worker, of one tenant (at most one by design; its background one apart). */
  runningFor(tenantId: string): number {
    return this.running.get(tenantId) ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.slots) clearTimeout(s.idle);
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots.length = 0;
  }
}
