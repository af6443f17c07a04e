// The router: one import path for its parts (docs/architecture.md, "The router").
//   embedder.ts     where dense vectors come from (word vectors, a model server's embeddings)
//   model.ts        what a router is trained on and answers; the training methods' names
//   numerics.ts     the softmax model and its SGD (no names, no texts)
//   fusion.ts       lexical and dense features combined
//   similarity.ts   the similarity check over kept examples
//   calibration.ts  thresholds from held-out examples
//   training.ts     the pipeline from examples to a stored layout
//   codec.ts        the stored layout, written and read back checked
//   router.ts       the Router: scores a message
//   stored.ts       what is done with a stored router
export { embedderFor, RouterVectorsError, SERVER_EMBEDDINGS, tableEmbedder, type DenseTable } from './embedder.js';
export {
  FUSED_MODEL,
  previousFusedModel,
  ROUTER_MODEL,
  routerModel,
  trainingTexts,
  TrainingTooLargeError,
  type RoutableCapability,
  type Scored,
} from './model.js';
export { ROUTER_STATE_FORMAT, storedFormat } from './codec.js';
export { loadRouter, Router, storeRouter } from './router.js';
export { storedPlan } from './stored.js';
