// The provider client against the scripted server: retries that honour retry-after, the
// authorization header, deadlines, and token counts with and without reported usage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmProvider } from '../../server/src/actions/llm-provider.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';

describe('LLM provider', () => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(async () => llm?.close());
  const ask = { messages: [{ role: 'user' as const, content: 'hi' }] };

  it('retries a 429 after the time its retry-after asks for, and a 503', async () => {
    llm.reset();
    llm.script({ status: 429, retryAfterSeconds: 1 }, { status: 503, retryAfterSeconds: 0 }, { text: 'third time' });
    const p = new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 10_000, maxRetries: 2 });
    const c = await p.complete(ask);
    expect(c.text).toBe('third time');
    expect(llm.calls).toHaveLength(3);
    expect(llm.calls[1].at - llm.calls[0].at).toBeGreaterThanOrEqual(950);
  });

  it('gives up after its retries, saying what the provider answered', async () => {
    llm.reset();
    llm.script({ status: 500, retryAfterSeconds: 0 }, { status: 500, retryAfterSeconds: 0 });
    const p = new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 5_000, maxRetries: 1 });
    await expect(p.complete(ask)).rejects.toThrow('provider answered HTTP 500');
    expect(llm.calls).toHaveLength(2);
  });

  it('says when the provider cannot be reached', async () => {
    const p = new LlmProvider({ url: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000, maxRetries: 0 });
    await expect(p.complete(ask)).rejects.toThrow(/^provider unreachable/);
  });

  // Each case would take 30 s or more if the deadline were not kept; the bound (3 s) says
  // "gave up on its own deadline", with room for a busy machine, not how fast it is.
  it('keeps to its deadline when retry-after asks for longer, without waiting for it', async () => {
    llm.reset();
    llm.script({ status: 429, retryAfterSeconds: 30 }, { text: 'too late' });
    const p = new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 400, maxRetries: 2 });
    const started = performance.now();
    await expect(p.complete(ask)).rejects.toThrow('provider answered HTTP 429');
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(llm.calls).toHaveLength(1);
  });

  it('keeps to its deadline when the server is slow, retries included', async () => {
    llm.reset();
    llm.script({ text: 'slow', delayMs: 30_000 }, { text: 'slow again', delayMs: 30_000 });
    const p = new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 400, maxRetries: 2 });
    const started = performance.now();
    await expect(p.complete(ask)).rejects.toThrow('no answer within 400 ms');
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(390);
    expect(took).toBeLessThan(3_000);
  });

  it('sends the API key as a bearer token, and no authorization header without one', async () => {
    llm.reset();
    llm.script({ text: 'a' }, { text: 'b' });
    await new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 2000, apiKey: 'sk-test' }).complete(ask);
    await new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 2000 }).complete(ask);
    expect(llm.calls[0].headers.authorization).toBe('Bearer sk-test');
    expect(llm.calls[1].headers.authorization).toBeUndefined();
    expect(llm.calls[0].body.model).toBe('m');
  });

  it('reads usage when reported, estimates it when not, and reads tool calls of a stream', async () => {
    llm.reset();
    llm.script(
      { text: 'counted', usage: { prompt: 7, completion: 3 } },
      { text: 'not counted', usage: null },
      { toolCalls: [{ name: 't', arguments: { a: 1 } }] },
    );
    const p = new LlmProvider({ url: llm.url, model: 'm', timeoutMs: 2000 });
    expect(await p.complete(ask)).toMatchObject({ inputTokens: 7, outputTokens: 3, estimated: false });
    const estimated = await p.complete(ask);
    expect(estimated.estimated).toBe(true);
    expect(estimated.inputTokens).toBeGreaterThan(0);
    const pieces: string[] = [];
    const streamed = await p.complete({ ...ask, onDelta: (t) => pieces.push(t) });
    expect(streamed.toolCalls).toEqual([{ id: 'call_0', name: 't', arguments: '{"a":1}' }]);
    expect(streamed.finishReason).toBe('tool_calls');
    expect(llm.calls[2].body.stream).toBe(true);
  });
});
