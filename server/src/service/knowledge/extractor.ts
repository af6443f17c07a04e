// Knowledge work off the event loop: reading files (extract) and building search indexes' postings
// (index), each in a worker thread, within a time limit (counted from when the worker is ready,
// never while the work waits for one) and a heap limit, with at most `workers` at once and one per
// tenant at a time (fair slots), so one tenant's pile of uploads queues behind itself, not in front
// of everyone else. The service keeps one pool for files and one for indexes, so a turn waiting
// for an index never waits behind a file being read. A worker that did its work (or refused a
// file for what it holds) takes the next; one that ran over its time or heap, or stopped, is
// ended, and the next gets a fresh one. Idle workers end after IDLE_MS.
import type { Worker } from 'node:worker_threads';
import { FairGate, GateTimeoutError } from '../../lib/fair-gate.js';
import { startWorker } from '../../lib/worker-thread.js';
import type { PostingsData } from '../../engine/knowledge-index.js';
import { ExtractError, type Extracted, type ExtractLimits } from './extract.js';
import type { WorkerReply, WorkerRequest } from './extract-worker.js';

export interface ExtractBudget {
  /** Files read (or indexes built) at once in the process. */
  workers: number;
  /** Time one file (or index) may take. */
  timeoutMs: number;
  /** The worker's heap. */
  memoryMb: number;
  /** A file's caps (a pool that only builds indexes has none). */
  limits?: ExtractLimits;
}

/** How a pool's failures read: what the work is, what a broken worker means, and what to do after a stop. */
interface Phrases {
  /** "reading the file" */
  doing: string;
  /** "the file could not be read" */
  failed: string;
  /** "upload it again" */
  after: string;
  /**
   * How long the work may wait for a worker before it fails: a file ten minutes (the slots are
   * fair, so only a long queue of others waits this long), an index that a turn waits for 30 s.
   */
  waitMs: number;
}
const READING: Phrases = { doing: 'reading the file', failed: 'the file could not be read', after: 'upload it again', waitMs: 10 * 60 * 1000 };
const INDEXING: Phrases = { doing: 'building the search index', failed: 'the search index could not be built', after: 'ask again', waitMs: 30_000 };

// From TypeScript sources the worker registers tsx itself (extract-boot.mjs); built, it is plain JavaScript.
const workerUrl = import.meta.url.endsWith('.ts') ? new URL('./extract-boot.mjs', import.meta.url) : new URL('./extract-worker.js', import.meta.url);

/** An idle worker is ended after this long (its heap returned); a file read soon after reuses it. */
const IDLE_MS = 5_000;

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  idle?: NodeJS.Timeout;
}

/** How work ended: with its result, refused for what the file holds (the worker is sound), or with the worker broken. */
type Outcome = Extract<WorkerReply, { ok: true }> | { ok: false; error: Error; sound: boolean };

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

  /** Sends one request to the worker and waits for its answer, its failure or the time limit. */
  private send(slot: Slot, msg: WorkerRequest, say: Phrases): Promise<Outcome> {
    const { worker } = slot;
    return new Promise<Outcome>((resolve) => {
      const done = (o: Outcome) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(o);
      };
      const onMessage = (m: WorkerReply) => done(m.ok ? m : { ok: false, error: m.refused ? new ExtractError(m.error) : new Error(m.error), sound: m.refused });
      const onError = (err: Error & { code?: string }) =>
        done({
          ok: false,
          sound: false,
          error:
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new ExtractError(`${say.doing} needed more than ${this.budget.memoryMb} MB of memory`)
              : new ExtractError(`${say.failed} (${err.message})`),
        });
      const onExit = () =>
        done({
          ok: false,
          sound: false,
          error: new ExtractError(this.closed ? `the server stopped while ${say.doing}: ${say.after}` : `${say.failed} (its worker stopped)`),
        });
      const timer = setTimeout(
        () =>
          done({
            ok: false,
            sound: false,
            error: new ExtractError(
              `${say.doing} took longer than ${this.budget.timeoutMs < 1000 ? `${this.budget.timeoutMs} ms` : `${Math.round(this.budget.timeoutMs / 1000)} s`}`,
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
    const { limits } = this.budget;
    if (!limits) throw new Error('this worker pool reads no files (it has no file caps)');
    const done = await this.run(tenantId, { kind: 'extract', bytes, filename, mediaType, limits }, READING);
    if (!('extracted' in done)) throw new ExtractError('the file could not be read (its worker answered something else)');
    return done.extracted;
  }

  /** The postings of passages (their titles and texts, in order), or an ExtractError saying why they could not be built. */
  async index(tenantId: string, titles: (string | null)[], texts: string[]): Promise<PostingsData> {
    const done = await this.run(tenantId, { kind: 'index', titles, texts }, INDEXING);
    if (!('postings' in done)) throw new ExtractError('the search index could not be built (its worker answered something else)');
    return done.postings;
  }

  private async run(tenantId: string, msg: WorkerRequest, say: Phrases): Promise<Extract<Outcome, { ok: true }>> {
    const release = await this.gate.acquire(tenantId, say.waitMs).catch((err: unknown) => {
      throw err instanceof GateTimeoutError ? new ExtractError(`${say.doing} waited longer than ${Math.round(say.waitMs / 1000)} s for a worker`) : err;
    });
    if (this.closed) {
      release();
      throw new ExtractError(`the server stopped before ${say.doing}: ${say.after}`);
    }
    const slot = this.idle.pop() ?? this.spawn();
    clearTimeout(slot.idle);
    this.busy.add(slot);
    let outcome: Outcome = { ok: false, sound: false, error: new ExtractError(`${say.failed} (its worker did not start)`) };
    try {
      await slot.ready;
      outcome = await this.send(slot, msg, say);
    } catch (err) {
      const stopped = this.stopping() ? `the server stopped while ${say.doing}: ${say.after}` : `${say.failed} (${(err as Error).message})`;
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
    return outcome;
  }

  /** Whether close() was called (read afresh after every wait: it may have been called meanwhile). */
  private stopping(): boolean {
    return this.closed;
  }

  /** Work under way, and waiting for a worker (metrics, tests). */
  get stats(): { active: number; waiting: number } {
    return this.gate.stats;
  }

  /** Ends every worker: work under way fails (a file's source says the server stopped), and no more is taken. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.idle.splice(0), ...this.busy];
    for (const s of all) clearTimeout(s.idle);
    await Promise.all(all.map((s) => s.worker.terminate()));
  }
}
