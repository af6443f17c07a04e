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
    const deadline = performance.now() + timeoutMs;
    const maxRetries = req.maxRetries ?? this.opts.maxRetries ?? 2;
    const promptChars = JSON.stringify(req.messages).length + JSON.stringify(req.tools ?? []).length;
    const progress = { written: false, cut: false };
    for (let attempt = 0; ; attempt++) {
      const left = Math.max(1, Math.round(deadline - performance.now()));
      const options = { signal: AbortSignal.timeout(left), timeout: left };
      try {
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
      } catch (e) {
        // A stream that has written part of a reply is not asked again: the words are out.
        const wait = attempt < maxRetries && !progress.written ? retryDelay(e, attempt) : null;
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
  const usage = r.usage;
  return {
    model: r.model || '',
    text,
    toolCalls,
    // Typed as always there; some compatible servers leave it out.
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    inputTokens: usage?.prompt_tokens ?? estimate(promptChars),
    outputTokens: usage?.completion_tokens ?? estimate(text.length + JSON.stringify(toolCalls).length),
    estimated: !usage,
  };
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
