// The server's one OpenAI-compatible Chat Completions client: generative phases and the routing
// fallback both speak through it. The protocol — requests, streamed replies, tool calls — is the
// official `openai` package's. Retries are this module's: the package's own sleep through a
// `retry-after` without regard to the caller's deadline (a 429 asking for 30 s held a 400 ms call
// for 30 s), so here they wait what `retry-after` asks only while the deadline allows. Also here:
// token counts when a server reports none, and errors in plain words.
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { LlmAnswer, LlmMessage, LlmTool } from '../engine/turn.js';

export interface ProviderOptions {
  url: string;
  model: string;
  apiKey?: string;
  /** The most one call may take, retries included. */
  timeoutMs: number;
  /** Retries on 429, 5xx and lost connections (the package's backoff, honouring retry-after). */
  maxRetries?: number;
}

export interface CompletionRequest {
  model?: string;
  temperature?: number;
  maxTokens?: number;
  messages: LlmMessage[];
  tools?: LlmTool[];
  /** Shorter than the provider's own deadline, for calls that must be quick (routing). */
  timeoutMs?: number;
  /** Fewer retries than the provider's own (0 for routing, which cannot wait for a backoff). */
  maxRetries?: number;
  /** Receives the reply's text as the provider writes it: the call is then streamed. */
  onDelta?: (text: string) => void;
  /**
   * A streamed reply longer than this (UTF-8 bytes) is not read further: the call ends with the
   * text so far (up to the piece that crossed it) and `finishReason: 'length'`; the turn cuts it.
   */
  maxTextBytes?: number;
}

export interface Completion extends LlmAnswer {
  /** The provider reported no usage: the counts are estimated (four characters a token). */
  estimated: boolean;
}

export interface EmbeddingRequest {
  model: string;
  texts: string[];
  /** Shorter than the provider's own deadline (routing's). */
  timeoutMs?: number;
  maxRetries?: number;
}

export interface Embeddings {
  model: string;
  dims: number;
  /** One a text, in the order of the texts. */
  vectors: Float32Array[];
  inputTokens: number;
  /** The provider reported no usage: the count is estimated (four characters a token). */
  estimated: boolean;
}

/** The longest embedding accepted (OpenAI's largest model answers 3,072 numbers). */
export const MAX_EMBEDDING_DIMS = 4096;

class ProviderError extends Error {}

const estimate = (chars: number) => Math.ceil(chars / 4);

export class LlmProvider {
  private readonly client: OpenAI;

  constructor(private readonly opts: ProviderOptions) {
    this.client = new OpenAI({
      baseURL: opts.url.replace(/\/+$/, ''),
      // The package needs a key; without one configured the authorization header is removed.
      apiKey: opts.apiKey ?? 'unset',
      organization: null,
      project: null,
      timeout: opts.timeoutMs,
      maxRetries: 0,
      ...(opts.apiKey ? {} : { defaultHeaders: { authorization: null } }),
    });
  }

  get model(): string {
    return this.opts.model;
  }

  get timeoutMs(): number {
    return this.opts.timeoutMs;
  }

  async complete(req: CompletionRequest): Promise<Completion> {
    const timeoutMs = Math.min(req.timeoutMs ?? this.opts.timeoutMs, this.opts.timeoutMs);
    const body: ChatCompletionCreateParamsNonStreaming = {
      model: req.model ?? this.opts.model,
      messages: req.messages,
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      // max_tokens, not OpenAI's newer max_completion_tokens: every compatible server reads it.
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
      ...(req.tools?.length
        ? { tools: req.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) }
        : {}),
    };
    const promptChars = JSON.stringify(req.messages).length + JSON.stringify(req.tools ?? []).length;
    const progress = { written: false, cut: false };
    // A stream that has written part of a reply is not asked again: the words are out.
    return this.retrying(
      timeoutMs,
      req.maxRetries,
      async (options) => {
        if (!req.onDelta) return read(await this.client.chat.completions.create(body, options), promptChars);
        const onDelta = req.onDelta;
        const stream = this.client.chat.completions.stream({ ...body, stream: true, stream_options: { include_usage: true } }, options);
        const max = req.maxTextBytes ?? Infinity;
        let text = '';
        let bytes = 0;
        stream.on('content', (delta) => {
          if (!delta || progress.cut) return;
          progress.written = true;
          bytes += Buffer.byteLength(delta);
          text += delta;
          onDelta(delta);
          // The piece that crosses the cap is kept, so the turn cuts the text and audits the cut.
          if (bytes > max) {
            progress.cut = true;
            stream.abort();
          }
        });
        try {
          return read(await stream.finalChatCompletion(), promptChars);
        } catch (e) {
          if (!progress.cut) throw e;
          return cutShort(text, body.model, promptChars);
        }
      },
      () => !progress.written,
    );
  }

  /**
   * Embeddings of `texts` from the server's `/embeddings` (OpenAI's request and answer), in
   * order, each as it came; the answer is checked (one vector a text, all of one length, at most
   * MAX_EMBEDDING_DIMS numbers, every one finite). Token usage as reported, else estimated.
   */
  async embed(req: EmbeddingRequest): Promise<Embeddings> {
    const timeoutMs = Math.min(req.timeoutMs ?? this.opts.timeoutMs, this.opts.timeoutMs);
    const chars = req.texts.reduce((n, t) => n + t.length, 0);
    return this.retrying(timeoutMs, req.maxRetries, async (options) => {
      const r = await this.client.embeddings.create({ model: req.model, input: req.texts, encoding_format: 'float' }, options);
      const data = (r as Partial<typeof r>).data;
      if (!Array.isArray(data) || data.length !== req.texts.length) {
        throw new ProviderError(`the provider answered ${Array.isArray(data) ? data.length : 'no'} embeddings for ${req.texts.length} texts`);
      }
      const vectors: (Float32Array | undefined)[] = Array.from({ length: req.texts.length }, () => undefined);
      let dims = -1;
      data.forEach((d, k) => {
        const at = typeof d.index === 'number' && Number.isInteger(d.index) && d.index >= 0 && d.index < data.length ? d.index : k;
        const e: unknown = d.embedding;
        if (!Array.isArray(e) || e.length === 0 || e.length > MAX_EMBEDDING_DIMS || (dims !== -1 && e.length !== dims)) {
          throw new ProviderError(`the provider answered an embedding that is not a list of 1 to ${MAX_EMBEDDING_DIMS} numbers of one length`);
        }
        dims = e.length;
        if (!e.every((x) => typeof x === 'number')) throw new ProviderError('the provider answered an embedding with a value that is not a number');
        // Checked as stored: a double such as 1e39 is finite, but Infinity as a float32.
        const v = Float32Array.from(e);
        if (!v.every(Number.isFinite)) throw new ProviderError('the provider answered an embedding with a value that is not a finite 32-bit number');
        vectors[at] = v;
      });
      const all = vectors.filter((v): v is Float32Array => v !== undefined);
      if (all.length !== vectors.length) throw new ProviderError('the provider answered embeddings with repeated indexes');
      const reported = tokenCount((r as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens);
      return { model: r.model || req.model, dims, vectors: all, inputTokens: reported ?? estimate(chars), estimated: reported === null };
    });
  }

  /**
   * Makes a call, asking again on 429, 5xx and lost connections while the deadline allows and
   * `mayRetry` says so; each attempt gets what is left of the deadline.
   */
  private async retrying<T>(
    timeoutMs: number,
    retries: number | undefined,
    call: (options: { signal: AbortSignal; timeout: number }) => Promise<T>,
    mayRetry: () => boolean = () => true,
  ): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    const maxRetries = retries ?? this.opts.maxRetries ?? 2;
    for (let attempt = 0; ; attempt++) {
      const left = Math.max(1, Math.round(deadline - performance.now()));
      try {
        return await call({ signal: AbortSignal.timeout(left), timeout: left });
      } catch (e) {
        const wait = attempt < maxRetries && mayRetry() ? retryDelay(e, attempt) : null;
        if (wait === null || performance.now() + wait >= deadline) throw explain(e, timeoutMs);
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}

/** How long to wait before asking again (retry-after, else backoff from 500 ms); null: do not retry. */
function retryDelay(e: unknown, attempt: number): number | null {
  if (e instanceof APIConnectionTimeoutError || e instanceof APIUserAbortError) return null;
  if (e instanceof APIError && e.status !== undefined) {
    if (e.status !== 408 && e.status !== 429 && e.status < 500) return null;
    const headers = (e as { headers?: Headers }).headers;
    const header = headers?.get('retry-after-ms') ?? null;
    if (header !== null && Number.isFinite(Number(header))) return Math.max(0, Number(header));
    const after = headers?.get('retry-after') ?? null;
    if (after !== null) {
      const seconds = Number(after);
      if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
      const at = Date.parse(after);
      if (Number.isFinite(at)) return Math.max(0, at - Date.now());
    }
  } else if (!(e instanceof APIError)) {
    return null;
  }
  return Math.min(8000, 500 * 2 ** attempt) * (0.75 + Math.random() / 2);
}

/** A streamed reply that was stopped at its size cap: the text so far, tokens estimated. */
function cutShort(text: string, model: string, promptChars: number): Completion {
  return {
    model,
    text,
    toolCalls: [],
    finishReason: 'length',
    inputTokens: estimate(promptChars),
    outputTokens: estimate(text.length),
    estimated: true,
  };
}

function read(r: ChatCompletion, promptChars: number): Completion {
  const choice = (r as Partial<ChatCompletion>).choices?.[0];
  if (!choice?.message) throw new ProviderError('the provider answered without a choice');
  const text = typeof choice.message.content === 'string' ? choice.message.content : '';
  const toolCalls = (choice.message.tool_calls ?? []).flatMap((c) =>
    c.type === 'function'
      ? [{ id: c.id || `call_${Math.random().toString(36).slice(2)}`, name: c.function.name, arguments: c.function.arguments || '{}' }]
      : [],
  );
  const input = tokenCount((r.usage as { prompt_tokens?: unknown } | undefined)?.prompt_tokens);
  const output = tokenCount((r.usage as { completion_tokens?: unknown } | undefined)?.completion_tokens);
  return {
    model: r.model || '',
    text,
    toolCalls,
    // Typed as always there; some compatible servers leave it out.
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    inputTokens: input ?? estimate(promptChars),
    outputTokens: output ?? estimate(text.length + JSON.stringify(toolCalls).length),
    estimated: input === null || output === null,
  };
}

/**
 * A token count a server reported, when it is one: a non-negative safe integer. Anything else
 * (absent, negative, fractional, a string) is replaced by the estimate: a negative count would
 * credit the tenant's day.
 */
function tokenCount(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

function explain(e: unknown, timeoutMs: number): ProviderError {
  if (e instanceof ProviderError) return e;
  if (e instanceof APIConnectionTimeoutError || e instanceof APIUserAbortError || (e instanceof Error && e.name === 'TimeoutError')) {
    return new ProviderError(`no answer within ${timeoutMs} ms`);
  }
  if (e instanceof APIError && e.status !== undefined) return new ProviderError(`provider answered HTTP ${e.status}`);
  if (e instanceof APIError) return new ProviderError(`provider unreachable: ${e.message}`);
  return new ProviderError(`provider reply could not be read: ${e instanceof Error ? e.message : String(e)}`);
}
