// A worker thread that trains routers, so that training a large definition never stalls the
// server's event loop. Receives { id, caps, outOfScope, vectors, maxBytes }; answers { id, state } (the router's stored
// layout) or { id, error, tooLarge }. The main thread's word vectors arrive as workerData, shared.
import { parentPort, workerData } from 'node:worker_threads';
import { embedderFor, Router, storeRouter, TrainingTooLargeError, type DenseTable, type RoutableCapability } from '../../engine/router/index.js';
import { WordVectors } from '../../engine/word-vectors.js';
import { collectNow } from '../../lib/collect.js';

export interface TrainRequest {
  id: number;
  caps: RoutableCapability[];
  outOfScope: string | null;
  /** Whether to train with the word vectors (the definition is English and the process has them), or with a model server's embeddings. */
  vectors: boolean | DenseTable;
  maxBytes: number;
}

const shared = (workerData as { vectors?: Parameters<typeof WordVectors.fromShared>[0] | null } | null)?.vectors;
/** The pool's word vectors (its app's), shared rather than copied. */
const words = shared ? WordVectors.fromShared(shared) : null;

// A full collection after each training lets V8 give back the pages of the training's peak (often
// several times the router it produced) instead of keeping them until a collection it may never
// need on an idle thread. V8's flags are the process's: started with --expose-gc (as the server
// is), the worker has `gc` too; without it, V8 collects when it will.
const collect = collectNow;

// Loaded and ready: the pool starts a training's clock only from here.
parentPort?.postMessage({ ready: true });

parentPort?.on('message', (msg: TrainRequest) => {
  // Nothing else runs on this thread: training need not yield.
  Router.train(msg.caps, {
    outOfScope: msg.outOfScope,
    maxBytes: msg.maxBytes,
    vectors: embedderFor(msg.vectors, words),
    pause: () => Promise.resolve(),
    collect,
  }).then(
    (router) => {
      // The stored layout, one buffer of its own (Buffer.alloc), transferred rather than copied.
      const state = storeRouter(router);
      parentPort!.postMessage({ id: msg.id, state }, [state.buffer as ArrayBuffer]);
      setImmediate(collect);
    },
    (err: unknown) =>
      parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err), tooLarge: err instanceof TrainingTooLargeError }),
  );
});
