// A worker thread that trains routers, so that training a large definition never stalls the
// server's event loop. Receives { id, caps, outOfScope, maxBytes }; answers { id, state } or
// { id, error, tooLarge }.
import { parentPort } from 'node:worker_threads';
import { Router, stateBuffers, TrainingTooLargeError, type RoutableCapability } from '../engine/router.js';

export interface TrainRequest {
  id: number;
  caps: RoutableCapability[];
  outOfScope: string | null;
  maxBytes: number;
}

// Loaded and ready: the pool starts a training's clock only from here.
parentPort?.postMessage({ ready: true });

parentPort?.on('message', (msg: TrainRequest) => {
  // Nothing else runs on this thread: training need not yield.
  Router.train(msg.caps, { outOfScope: msg.outOfScope, maxBytes: msg.maxBytes, pause: () => Promise.resolve() }).then(
    (router) => {
      const state = router.toState();
      parentPort!.postMessage({ id: msg.id, state }, stateBuffers(state));
    },
    (err: unknown) =>
      parentPort!.postMessage({ id: msg.id, error: err instanceof Error ? err.message : String(err), tooLarge: err instanceof TrainingTooLargeError }),
  );
});
