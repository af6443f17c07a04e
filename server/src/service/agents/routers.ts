// The lifecycle of trained routers, beside the agent service (which compiles and caches
// definitions): for a definition's digest, load the stored router or train one, convert an older
// layout, retrain another model's in the background, store what was trained, and the same for
// the router of a model server's embeddings. What to do with stored bytes is decided in one place
// (the engine's storedPlan); this service carries it out and counts it.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { TrainRouter } from '../../engine/compile.js';
import {
  embedderFor,
  previousFusedModel,
  Router,
  ROUTER_STATE_FORMAT,
  routerModel,
  storedPlan,
  storeRouter,
  TrainingTooLargeError,
  trainingTexts,
  type RoutableCapability,
} from '../../engine/router/index.js';
import type { WordVectors } from '../../engine/word-vectors.js';
import { sha256 } from '../../lib/canonical.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { RouterStore } from '../../store/agents/router-store.js';
import type { ServerEmbeddings } from './server-embeddings.js';
import type { Trainer } from './training.js';
import { TrainingBudgetError } from '../../errors.js';

/** How this process came by the routers it compiled with (switchboard_routers_total). */
export interface RouterCounts {
  /** Trained here: a new definition, or one with no usable stored router. */
  trained: number;
  /** Loaded from storage. */
  stored: number;
  /** Stored by an older model: answered with, and trained again in the background. */
  retrained: number;
  /** Stored in an older layout by the same model: converted on load and stored again as converted. */
  converted: number;
}

export interface RouterServiceOptions {
  /** Trains routers (a worker pool in the server); in this thread when absent. */
  trainer?: Trainer;
  /** Where trained routers are stored and loaded; every process trains its own when absent. */
  store?: RouterStore;
  /** The model server's embeddings (LLM_EMBEDDINGS_MODEL). */
  embeddings?: ServerEmbeddings;
  /** The app's word vectors (ROUTER_VECTORS), for English definitions. */
  words?: WordVectors | null;
  log?: Pick<Logger, 'warn' | 'info'>;
}

/** How long after a failed training of a router of server embeddings (budget, server down) it is tried again. */
const SEMANTIC_RETRY_MS = 10 * 60_000;

export class RouterService {
  readonly counts: RouterCounts = { trained: 0, stored: 0, retrained: 0, converted: 0 };
  /** Background trainings of routers stored by an older model, by tenant and digest. */
  private readonly retraining = new Map<string, Promise<void>>();
  /** Routers of server embeddings being trained or loaded, by tenant and definition digest. */
  private readonly semanticPending = new Map<string, Promise<Router | null>>();
  /** Why a definition has no router of server embeddings (a failed training), by tenant and digest. */
  private readonly semanticFailed = new LRUCache<string, { error: string; at: number }>({ max: 10_000 });
  /** When a definition's router of server embeddings was last trained again for embeddings of another length. */
  private readonly semanticRetrained = new LRUCache<string, number>({ max: 10_000 });

  constructor(
    private readonly clock: Clock,
    private readonly opts: RouterServiceOptions = {},
  ) {}

  /** The tenant's trainings; `background` for those nobody waits for (they never delay the tenant's `PUT`s). */
  private trainFor(tenantId: string, background = false): TrainRouter {
    const t = this.opts.trainer;
    return t
      ? (caps, outOfScope, vectors) => t(tenantId, caps, outOfScope, vectors, { background })
      : (caps, outOfScope, vectors) =>
          Router.train(caps, { outOfScope, vectors: embedderFor(vectors, this.opts.words ?? null) }).catch((err: unknown) => {
            // The engine's refusal, answered as the training pool's is.
            throw err instanceof TrainingTooLargeError ? new TrainingBudgetError(err.message, { cause: err }) : err;
          });
  }

  /** Trains routers that are not stored (an evaluation's cross-validation folds) in the tenant's background turn of the training pool. */
  unstored(tenantId: string): TrainRouter {
    return this.trainFor(tenantId, true);
  }

  /** Stores a router of the definition `digest` under `key` (the digest itself, or the key of its router of server embeddings). */
  private async save(tenantId: string, key: string, digest: string, router: Router, failure: string): Promise<void> {
    const state = storeRouter(router);
    const r = await this.opts.store
      ?.save(tenantId, key, { format: ROUTER_STATE_FORMAT, model: router.model, state }, iso(this.clock.now()), digest)
      .catch((err: unknown) => this.opts.log?.warn({ err, tenant: tenantId, digest: key }, failure));
    if (!r) return;
    if (!r.stored) {
      this.opts.log?.warn(
        { tenant: tenantId, digest, bytes: state.length },
        'a trained router is larger than the tenant may store (ROUTER_STORE_TENANT_MB): not stored, so every process that meets it trains its own',
      );
    }
    if (r.deleted > 0)
      this.opts.log?.info({ tenant: tenantId, deleted: r.deleted }, 'stored routers deleted: unreferenced, or the oldest past ROUTER_STORE_TENANT_MB');
  }

  private async load(tenantId: string, key: string) {
    return (
      (await this.opts.store?.load(tenantId, key).catch((err: unknown) => {
        this.opts.log?.warn({ err, tenant: tenantId, digest: key }, 'could not read a stored router: training it');
        return null;
      })) ?? null
    );
  }

  /**
   * The router of the definition with this digest, as storedPlan decides: the stored one used or
   * converted (stored again in the current layout without training), or answering while it is
   * trained again in the background (`onRetrained` receives the new one), or trained now and
   * stored, so that no other process trains it again. A store that cannot be read or written
   * costs a training, never an answer.
   */
  routerFor(tenantId: string, digest: string, onRetrained?: (router: Router) => void): TrainRouter {
    const trainAndStore =
      (background: boolean): TrainRouter =>
      async (caps, outOfScope, vectors) => {
        const router = await this.trainFor(tenantId, background)(caps, outOfScope, vectors);
        this.counts.trained++;
        await this.save(tenantId, digest, digest, router, 'could not store a trained router: other processes will train it too');
        return router;
      };
    if (!this.opts.store) return trainAndStore(false);
    return async (caps, outOfScope, vectors) => {
      // The model this process trains for this definition: with its word vectors, when it has
      // them and the definition is English.
      const words = this.opts.words ?? null;
      const model = routerModel(vectors ? words : null);
      const decided = storedPlan(await this.load(tenantId, digest), { model, caps, outOfScope }, words);
      if (decided.plan === 'train') {
        if (decided.reason !== 'none stored') {
          this.opts.log?.warn({ tenant: tenantId, digest, reason: decided.reason }, 'a stored router could not be used here: training it');
        }
        return trainAndStore(false)(caps, outOfScope, vectors);
      }
      const router = decided.router;
      this.counts.stored++;
      if (decided.plan === 'convert') {
        // The same training in an older layout: the converted bytes are what training would
        // store now, so they are stored in its place without training.
        this.counts.converted++;
        void this.save(tenantId, digest, digest, router, 'could not store a converted router: it is converted again on its next load');
      }
      const key = `${tenantId}:${digest}`;
      if (decided.plan === 'retrain' && onRetrained && !this.retraining.has(key)) {
        this.counts.retrained++;
        this.opts.log?.info({ tenant: tenantId, digest, stored: router.model, model }, 'router stored by another model: training it again');
        this.retraining.set(
          key,
          trainAndStore(true)(caps, outOfScope, vectors)
            .then(onRetrained, (err: unknown) =>
              this.opts.log?.warn({ err, tenant: tenantId, digest }, 'training a stored router again failed: the stored one goes on answering'),
            )
            .finally(() => this.retraining.delete(key)),
        );
      }
      return router;
    };
  }

  /** Why the definition has no router of server embeddings, when its training failed lately. */
  semanticFailure(tenantId: string, digest: string): string | null {
    return this.semanticFailed.get(`${tenantId}:${digest}`)?.error ?? null;
  }

  /**
   * Whether the definition's router of server embeddings may be trained again for embeddings of
   * another length (`error` says what changed): once every SEMANTIC_RETRY_MS, so a server that
   * keeps changing cannot spend the tenant's tokens on trainings; otherwise the failure is kept.
   */
  mayRetrainSemantic(tenantId: string, digest: string, error: string): boolean {
    const at = `${tenantId}:${digest}`;
    const last = this.semanticRetrained.get(at);
    if (last !== undefined && Date.now() - last < SEMANTIC_RETRY_MS) {
      this.semanticFailed.set(at, { error: `${error}, and was trained again less than ${SEMANTIC_RETRY_MS / 60_000} minutes ago`, at: Date.now() });
      return false;
    }
    this.semanticRetrained.set(at, Date.now());
    return true;
  }

  /**
   * The router of server embeddings of the definition with this digest: stored (under a digest of
   * the definition's and the embeddings' ids) and of `dims` numbers when the length is known
   * (else of the length the server answered last), else trained here (its texts embedded by the
   * model server within the tenant's budget) and stored. One training per definition at a time in
   * this process; after a failure, none for SEMANTIC_RETRY_MS. Never throws: null when there is none.
   */
  semanticFor(tenantId: string, digest: string, input: { caps: RoutableCapability[]; outOfScope: string | null }, dims?: number): Promise<Router | null> {
    const embeddings = this.opts.embeddings!;
    const origin = `${tenantId}:${digest}`;
    const failed = this.semanticFailed.get(origin);
    if (failed && Date.now() - failed.at < SEMANTIC_RETRY_MS) return Promise.resolve(null);
    let p = this.semanticPending.get(origin);
    if (p) return p;
    const key = sha256(`${digest}\n${embeddings.id}`);
    const work = async (): Promise<Router | null> => {
      const { caps, outOfScope } = input;
      const decided = storedPlan(await this.load(tenantId, key), { model: routerModel(embeddings), caps, outOfScope }, null);
      const expected = dims ?? embeddings.dims;
      // Stored by this training method, or the one before it (which scored every class's dense
      // features in the first epoch, at a higher cost but to much the same router): training
      // again would embed every example again, at the tenant's expense, for nothing it would
      // route differently. Embeddings of another length than the server answers now are trained again.
      const usable =
        (decided.plan === 'use' || (decided.plan === 'retrain' && decided.router.model === previousFusedModel(embeddings))) &&
        (expected === null || decided.router.dims === expected);
      if (usable) return decided.router;
      if (decided.plan !== 'train' || decided.reason !== 'none stored') {
        this.opts.log?.info(
          {
            tenant: tenantId,
            digest,
            reason: decided.plan === 'train' ? decided.reason : `${decided.plan}: ${decided.router.model}, ${decided.router.dims} numbers`,
          },
          'a stored router of server embeddings is not used: training it',
        );
      }
      const started = performance.now();
      const table = await embeddings.embedTexts(tenantId, trainingTexts(caps, outOfScope));
      const router = await this.trainFor(tenantId, true)(caps, outOfScope, table);
      this.counts.trained++;
      await this.save(tenantId, key, digest, router, 'could not store a router of server embeddings');
      this.opts.log?.info(
        { tenant: tenantId, digest, model: router.model, texts: table.texts.length, dims: table.dims, ms: Math.round(performance.now() - started) },
        'router of server embeddings trained',
      );
      return router;
    };
    p = work()
      .catch((err: unknown) => {
        const error = (err as Error).message;
        this.semanticFailed.set(origin, { error, at: Date.now() });
        this.opts.log?.warn({ tenant: tenantId, digest, error }, 'training a router of server embeddings failed: the local router answers');
        return null;
      })
      .finally(() => this.semanticPending.delete(origin));
    this.semanticPending.set(origin, p);
    return p;
  }
}
