// Reading knowledge files off the event loop: each file in a worker thread, within a time limit
// (counted from when the worker is ready, never while the file waits for one) and a heap limit,
// with at most `workers` files read at once and one file per tenant at a time (fair slots), so
// one tenant's pile of uploads queues behind itself, not in front of everyone else. A worker that
// read a file (or refused one for what it holds) reads the next; one that ran over its time or
// heap, or stopped, is ended, and the next file gets a fresh one. Idle workers end after IDLE_MS.
import type { Worker } from 'node:worker_threads';
import { FairGate } from '../../lib/fair-gate.js';
import { startWorker } from '../../lib/worker-thread.js';
import { ExtractError, type Extracted, type ExtractLimits } from './extract.js';
import type { ExtractReply, ExtractRequest } from './extract-worker.js';

export interface ExtractBudget {
  /** Files read at once in the process. */
  workers: number;
  /** Time one file may take to read. */
  timeoutMs: number;
  /** The reading worker's heap. */
  memoryMb: number;
  limits: ExtractLimits;
}

// From TypeScript sources the worker registers tsx itself (extract-boot.mjs); built, it is plain JavaScript.
const workerUrl = import.meta.url.endsWith('.ts') ? new URL('./extract-boot.mjs', import.meta.url) : new URL('./extract-worker.js', import.meta.url);

/** How long a file may wait for a worker before its ingestion fails (the slots are fair, so only a long queue of others waits this long). */
const WAIT_MS = 10 * 60 * 1000;
/** An idle worker is ended after this long (its heap returned); a file read soon after reuses it. */
const IDLE_MS = 5_000;

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  idle?: NodeJS.Timeout;
}

/** How a read ended: with its result, refused for what the file holds (the worker is sound), or with the worker broken. */
type Outcome = { ok: true; extracted: Extracted } | { ok: false; error: Error; sound: boolean };

export class Extractor {
  private readonly gate: FairGate;
  private readonly idle: Slot[] = [];
  private readonly busy = new Set<Slot>();
  private closed = false;

  constructor(readonly budget: ExtractBudget) {
    this.gate = new FairGate({ total: budget.workers, perKey: 1 });
  }

  private spawn(): Slot {
    return startWorker(workerUrl, { resourceLimits: { maxOldGenerationSizeMb: this.budget.memoryMb, maxYoungGenerationSizeMb: 16 } });
  }

  /** Sends one file to the worker and waits for its answer, its failure or the time limit. */
  private read(slot: Slot, msg: ExtractRequest): Promise<Outcome> {
    const { worker } = slot;
    return new Promise<Outcome>((resolve) => {
      const done = (o: Outcome) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(o);
      };
      const onMessage = (m: ExtractReply) =>
        done(m.ok ? m : { ok: false, error: m.refused ? new ExtractError(m.error) : new Error(m.error), sound: m.refused });
      const onError = (err: Error & { code?: string }) =>
        done({
          ok: false,
          sound: false,
          error:
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new ExtractError(`reading the file needed more than ${this.budget.memoryMb} MB of memory`)
              : new ExtractError(`the file could not be read (${err.message})`),
        });
      const onExit = () =>
        done({
          ok: false,
          sound: false,
          error: new ExtractError(
            this.closed ? 'the server stopped while reading the file: upload it again' : 'the file could not be read (its reader stopped)',
          ),
        });
      const timer = setTimeout(
        () =>
          done({
            ok: false,
            sound: false,
            error: new ExtractError(
              `reading the file took longer than ${this.budget.timeoutMs < 1000 ? `${this.budget.timeoutMs} ms` : `${Math.round(this.budget.timeoutMs / 1000)} s`}`,
            ),
          }),
        this.budget.timeoutMs,
      );
      worker.on('message', onMessage);
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.postMessage(msg);
    });
  }

  /** The file's text as sections (extract.ts), or an ExtractError saying why it cannot be read. */
  async extract(tenantId: string, bytes: Uint8Array, filename: string | null, mediaType: string | null): Promise<Extracted> {
    const release = await this.gate.acquire(tenantId, WAIT_MS);
    if (this.closed) {
      release();
      throw new ExtractError('the server stopped before reading the file: upload it again');
    }
    const slot = this.idle.pop() ?? this.spawn();
    clearTimeout(slot.idle);
    this.busy.add(slot);
    let outcome: Outcome = { ok: false, sound: false, error: new ExtractError('the file could not be read (its reader did not start)') };
    try {
      await slot.ready;
      outcome = await this.read(slot, { bytes, filename, mediaType, limits: this.budget.limits });
    } catch (err) {
      const stopped = this.stopping() ? 'the server stopped while reading the file: upload it again' : `the file could not be read (${(err as Error).message})`;
      outcome = { ok: false, sound: false, error: new ExtractError(stopped) };
    } finally {
      this.busy.delete(slot);
      if ((outcome.ok || outcome.sound) && !this.stopping()) {
        slot.idle = setTimeout(() => {
          this.idle.splice(this.idle.indexOf(slot), 1);
          void slot.worker.terminate();
        }, IDLE_MS);
        slot.idle.unref();
        this.idle.push(slot);
      } else void slot.worker.terminate();
      release();
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.extracted;
  }

  /** Whether close() was called (read afresh after every wait: it may have been called meanwhile). */
  private stopping(): boolean {
    return this.closed;
  }

  /** Files being read, and waiting for a worker (metrics, tests). */
  get stats(): { active: number; waiting: number } {
    return this.gate.stats;
  }

  /** Ends every worker: files being read fail (their sources say the server stopped), and no more are read. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.idle.splice(0), ...this.busy];
    for (const s of all) clearTimeout(s.idle);
    await Promise.all(all.map((s) => s.worker.terminate()));
  }
}
