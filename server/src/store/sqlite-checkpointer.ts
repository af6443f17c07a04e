// WAL checkpoints on a thread of their own. In WAL mode SQLite copies committed pages back into
// the database file (a checkpoint, with an fsync) from within whichever commit pushes the WAL past
// `wal_autocheckpoint` pages: on the event loop, in the middle of a request. Under a steady write
// load that was about a sixth of the server's throughput (docs/performance.md). Here a worker
// thread with its own connection runs a PASSIVE checkpoint (which never waits for, nor blocks,
// readers and writers) every CHECKPOINT_MS; the server's connection keeps a much higher
// `wal_autocheckpoint` as a backstop, so the WAL stays bounded if the worker falls behind or dies.
// No library does this for better-sqlite3; the worker is a few lines of plain JavaScript, run
// from source so that it works the same from TypeScript sources and from the build.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints. */
const CHECKPOINT_MS = 200;

/** Pages of WAL after which the server's own connection checkpoints (4 KiB pages: about 40 MiB). */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // SQLITE_BUSY: the server's backstop checkpoint is running; the next tick tries again.
    if (err.code !== 'SQLITE_BUSY') parentPort.postMessage({ error: String(err.message) });
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  close(): Promise<void>;
}

/**
 * Starts checkpointing the SQLite file `file` (in WAL mode already) from a worker thread.
 * `onError` hears what the worker could not do; the backstop keeps the WAL bounded meanwhile.
 */
export function startCheckpointer(file: string, onError: (message: string) => void): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver, intervalMs: CHECKPOINT_MS } });
  worker.unref();
  worker.on('message', (m: { error?: string }) => m.error && onError(m.error));
  worker.on('error', (err) => onError(err.message));
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    close: async () => {
      worker.postMessage('close');
      // A worker that does not answer (it never should) is ended after a second.
      const timer = setTimeout(() => void worker.terminate(), 1_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
