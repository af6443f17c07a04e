// Embeddings from the configured model server (LLM_EMBEDDINGS_MODEL), for routing: the training
// texts of a definition in batches, and each routed message within routing's own time limit.
// Every call goes through the model gate, so it counts against the tenant's daily tokens and
// takes a slot of the tenant's share of the model server.
import { SERVER_EMBEDDINGS, type DenseTable } from '../../engine/router/index.js';
import { estimateTextTokens } from '../../engine/tokens.js';
import type { EmbedReply } from '../../engine/turn.js';
import { ModelRefusal, type ModelGate } from '../model-gate.js';

export interface ServerEmbeddingsOptions {
  model: string;
  /** The most a routed message waits for its embedding (ROUTER_EMBEDDINGS_TIMEOUT_MS). */
  timeoutMs: number;
  /** The most one call may send, in estimated tokens (LLM_MAX_INPUT_TOKENS): batches stay under it. */
  maxInputTokens: number;
}

/** Texts one call embeds at most (a batch also stays under the input cap). */
const BATCH_TEXTS = 64;

/**
 * Scales v to unit length in place (a zero vector stays zero). The provider's client has checked
 * that every component is a finite float32, so the norm, summed in doubles, is finite; one that
 * is not, or a result that is not, is refused rather than scored.
 */
function normalise(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  if (!Number.isFinite(n)) throw new Error('the model server answered an embedding whose length is not a finite number');
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  if (!v.every(Number.isFinite)) throw new Error('the model server answered an embedding that does not normalise');
  return v;
}

export class ServerEmbeddings {
  /** The embeddings' id in a router's model (`embeddings:<model>`). */
  readonly id: string;

  constructor(
    private readonly gate: () => ModelGate,
    private readonly opts: ServerEmbeddingsOptions,
  ) {
    this.id = `${SERVER_EMBEDDINGS}${opts.model}`;
  }

  get model(): string {
    return this.opts.model;
  }

  /** The length of the embeddings the server answered last (null before its first answer). */
  get dims(): number | null {
    return this.lastDims;
  }

  private lastDims: number | null = null;

  /** A routed message's embedding, or why there is none; never throws, never retries (routing cannot wait for a backoff). */
  async embedMessage(tenantId: string, text: string): Promise<EmbedReply> {
    const started = performance.now();
    const durationMs = () => Math.round((performance.now() - started) * 100) / 100;
    try {
      const e = await this.gate().embed(tenantId, { model: this.opts.model, texts: [text], timeoutMs: this.opts.timeoutMs, maxRetries: 0 });
      this.lastDims = e.dims;
      return { vector: normalise(e.vectors[0]), model: this.opts.model, durationMs: durationMs() };
    } catch (err) {
      return {
        vector: null,
        model: this.opts.model,
        durationMs: durationMs(),
        error: (err as Error).message,
        code: err instanceof ModelRefusal ? err.code : 'llm_error',
      };
    }
  }

  /**
   * The embeddings of a router's training texts, each once, in batches of at most BATCH_TEXTS and
   * under the input cap as the model gate estimates it, one call at a time with the provider's own
   * timeout and retries. Throws the first failure (a refused budget included): a router is not
   * trained on part of its texts.
   */
  async embedTexts(tenantId: string, texts: string[]): Promise<DenseTable> {
    const unique = [...new Set(texts)];
    const vectors: Float32Array[] = [];
    let dims = -1;
    for (let i = 0; i < unique.length;) {
      let tokens = estimateTextTokens(unique[i]);
      let end = i + 1;
      while (end < unique.length && end - i < BATCH_TEXTS && tokens + estimateTextTokens(unique[end]) <= this.opts.maxInputTokens) {
        tokens += estimateTextTokens(unique[end++]);
      }
      const e = await this.gate().embed(tenantId, { model: this.opts.model, texts: unique.slice(i, end) });
      if (dims !== -1 && e.dims !== dims) throw new Error(`the model server answered embeddings of ${e.dims} numbers after ${dims}`);
      dims = this.lastDims = e.dims;
      for (const v of e.vectors) vectors.push(normalise(v));
      i = end;
    }
    const data = new Float32Array(Math.max(0, dims) * vectors.length);
    vectors.forEach((v, k) => data.set(v, k * dims));
    return { id: this.id, dims: Math.max(0, dims), texts: unique, data };
  }
}
