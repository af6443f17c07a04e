// Reading knowledge files off the event loop: each file in a worker thread of its own, within a
// time limit (counted from when the worker is ready, never while the file waits for one) and a
// heap limit, with at most `workers` files read at once and one file per tenant at a time (fair
// slots), so one tenant's pile of uploads queues behind itself, not in front of everyone else.
import { FairGate } from '../../lib/fair-gate.js';
import { startWorker } from '../../lib/worker-thread.js';
import { ExtractError, type Extracted, type ExtractLimits } from './extract.js';
import type { ExtractRequest } from './extract-worker.js';

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

export class Extractor {
  private readonly gate: FairGate;

  constructor(readonly budget: ExtractBudget) {
    this.gate = new FairGate({ total: budget.workers, perKey: 1 });
  }

  /** The file's text as sections (extract.ts), or an ExtractError saying why it cannot be read. */
  async extract(tenantId: string, bytes: Uint8Array, filename: string | null, mediaType: string | null): Promise<Extracted> {
    const release = await this.gate.acquire(tenantId, WAIT_MS);
    const { worker, ready } = startWorker(workerUrl, { resourceLimits: { maxOldGenerationSizeMb: this.budget.memoryMb, maxYoungGenerationSizeMb: 16 } });
    let timer: NodeJS.Timeout | undefined;
    try {
      await ready;
      return await new Promise<Extracted>((resolve, reject) => {
        timer = setTimeout(
          () => reject(new ExtractError(`reading the file took longer than ${Math.round(this.budget.timeoutMs / 1000)} s`)),
          this.budget.timeoutMs,
        );
        worker.once('message', (m: { ok: true; extracted: Extracted } | { ok: false; error: string; refused: boolean }) => {
          if (m.ok) resolve(m.extracted);
          else reject(m.refused ? new ExtractError(m.error) : new Error(m.error));
        });
        worker.once('error', (err: Error & { code?: string }) =>
          reject(
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new ExtractError(`reading the file needed more than ${this.budget.memoryMb} MB of memory`)
              : new ExtractError(`the file could not be read (${err.message})`),
          ),
        );
        worker.once('exit', (code) => reject(new ExtractError(`the file could not be read (the reader stopped with code ${code})`)));
        const msg: ExtractRequest = { bytes, filename, mediaType, limits: this.budget.limits };
        worker.postMessage(msg);
      });
    } finally {
      clearTimeout(timer);
      void worker.terminate();
      release();
    }
  }

  /** Files being read, and waiting for a worker (metrics, tests). */
  get stats(): { active: number; waiting: number } {
    return this.gate.stats;
  }
}
