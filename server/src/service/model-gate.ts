// The one way to the shared model server: every model call, a generative phase's or the routing
// fallback's, live or replayed, passes here. It is refused when it asks for a model the operator
// does not offer (LLM_MODELS) or sends more than LLM_MAX_INPUT_TOKENS; its estimated tokens
// (input, plus the most it may write) are reserved against the tenant's daily cap before it is
// made and settled to what it really spent after, so calls under way count; and it waits for a
// slot of its tenant's (LLM_TENANT_CONCURRENCY) among the process's (LLM_CONCURRENCY), served
// in turn across tenants, so one tenant's burst does not push another's call past its time-out.
import type { Completion, CompletionRequest, EmbeddingRequest, Embeddings, LlmProvider } from '../actions/llm-provider.js';
import { estimateInputTokens, estimateTextTokens } from '../engine/tokens.js';
import { FairGate, GateTimeoutError } from '../lib/fair-gate.js';
import { iso, type Clock } from '../lib/clock.js';
import type { LlmUsageStore } from '../store/llm-usage-store.js';

/** A call the gate would not make: `llm_budget_exceeded` for tokens, `llm_error` otherwise. */
export class ModelRefusal extends Error {
  constructor(
    readonly code: 'llm_error' | 'llm_budget_exceeded',
    message: string,
  ) {
    super(message);
  }
}

export interface ModelGateOptions {
  /** Models a definition may name; the provider's default is always among them. */
  models: readonly string[];
  /** The most one call may send, in estimated tokens (four characters a token). */
  maxInputTokens: number;
  /** Tokens a tenant may spend per UTC day, across processes (0: no cap). */
  tenantDailyTokens: number;
  /** Model calls under way at once in this process, in all and per tenant. */
  concurrency: { total: number; perTenant: number };
  /** Told a tenant's tokens of the day after each call (metrics). */
  onTokens?: (tenantId: string, day: string, total: number) => void;
}

/** Output tokens reserved for a call that sets no max_tokens. */
const DEFAULT_OUTPUT_RESERVE = 1024;

export class ModelGate {
  private readonly slots: FairGate;
  private readonly allowed: Set<string>;

  constructor(
    private readonly provider: LlmProvider,
    private readonly usage: LlmUsageStore,
    private readonly clock: Clock,
    private readonly opts: ModelGateOptions,
  ) {
    this.slots = new FairGate({ total: opts.concurrency.total, perKey: opts.concurrency.perTenant });
    this.allowed = new Set([provider.model, ...opts.models]);
  }

  get model(): string {
    return this.provider.model;
  }

  /** The models a definition may name. */
  get models(): string[] {
    return [...this.allowed];
  }

  /** Calls the provider for the tenant within its budgets; throws ModelRefusal, or the provider's error. */
  async complete(tenantId: string, req: CompletionRequest): Promise<Completion> {
    const model = req.model ?? this.provider.model;
    if (!this.allowed.has(model)) {
      throw new ModelRefusal('llm_error', `the model "${model.slice(0, 100)}" is not offered by this server (LLM_MODELS: ${[...this.allowed].join(', ')})`);
    }
    const input = estimateInputTokens(req.messages, req.tools);
    return this.metered(
      tenantId,
      { input, reserved: input + (req.maxTokens ?? DEFAULT_OUTPUT_RESERVE) },
      req.timeoutMs,
      (timeoutMs) => this.provider.complete({ ...req, timeoutMs }),
      (c) => c.inputTokens + c.outputTokens,
    );
  }

  /**
   * Embeddings for the tenant (routing's, LLM_EMBEDDINGS_MODEL), within the same budgets as a
   * completion: the input cap, the tenant's daily tokens (reserved at four characters a token,
   * settled to what the server reports) and a slot of the tenant's share of the model server.
   */
  async embed(tenantId: string, req: EmbeddingRequest): Promise<Embeddings> {
    const input = req.texts.reduce((n, t) => n + estimateTextTokens(t), 0);
    return this.metered(
      tenantId,
      { input, reserved: input },
      req.timeoutMs,
      (timeoutMs) => this.provider.embed({ ...req, timeoutMs }),
      (e) => e.inputTokens,
    );
  }

  /**
   * Refuses a call that would send more than the input cap, reserves `reserved` tokens of the
   * tenant's day, waits for a slot of the tenant's (the wait comes out of the call's time), makes
   * the call with the time left, and settles the day's tokens to what the call spent.
   */
  private async metered<T>(
    tenantId: string,
    { input, reserved }: { input: number; reserved: number },
    requestedMs: number | undefined,
    call: (timeoutMs: number) => Promise<T>,
    spentOf: (r: T) => number,
  ): Promise<T> {
    if (input > this.opts.maxInputTokens) {
      throw new ModelRefusal('llm_budget_exceeded', `the call would send about ${input} tokens, more than LLM_MAX_INPUT_TOKENS (${this.opts.maxInputTokens})`);
    }
    const day = iso(this.clock.now()).slice(0, 10);
    const cap = this.opts.tenantDailyTokens;
    if ((await this.usage.reserve(tenantId, day, reserved, cap)) === null) {
      throw new ModelRefusal(
        'llm_budget_exceeded',
        `the tenant's ${cap} model tokens for ${day} are spent or reserved by calls under way (this call needs up to ${reserved})`,
      );
    }
    let spent = 0;
    let release: (() => void) | null = null;
    try {
      const timeoutMs = Math.min(requestedMs ?? this.provider.timeoutMs, this.provider.timeoutMs);
      const started = performance.now();
      try {
        release = await this.slots.acquire(tenantId, timeoutMs);
      } catch (e) {
        if (e instanceof GateTimeoutError) throw new ModelRefusal('llm_error', `the model server is busy: no turn for this tenant within ${timeoutMs} ms`);
        throw e;
      }
      // The time spent waiting for a slot comes out of the call's own.
      const r = await call(Math.max(1, Math.round(timeoutMs - (performance.now() - started))));
      spent = spentOf(r);
      return r;
    } finally {
      release?.();
      const total = await this.usage.settle(tenantId, day, spent - reserved);
      this.opts.onTokens?.(tenantId, day, total);
    }
  }
}
