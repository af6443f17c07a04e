// The provider client against the scripted server: retries that honour retry-after, the
// authorization header, deadlines, and token counts with and without reported usage; and its
// embeddings, with the answers it refuses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmProvider, MAX_EMBEDDING_DIMS } from '../../server/src/actions/llm-provider.js';
import { FAKE_EMBEDDING_DIMS, fakeEmbedding, startFakeEmbeddings, type FakeEmbeddings } from '../helpers/fake-embeddings.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';

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
    // A count that is not a non-negative whole number is estimated instead: a negative one would credit the tenant's day.
    for (const usage of [
      { prompt: -999_999, completion: 3 },
      { prompt: 7, completion: 1.5 },
      { prompt: '7' as unknown as number, completion: 3 },
    ]) {
      llm.script({ text: 'odd usage', usage });
      const odd = await p.complete(ask);
      expect(odd.estimated, JSON.stringify(usage)).toBe(true);
      expect(odd.inputTokens).toBeGreaterThan(0);
      expect(Number.isSafeInteger(odd.outputTokens) && odd.outputTokens >= 0).toBe(true);
    }
  });
});

describe('LLM provider: embeddings', () => {
  let fake: FakeEmbeddings;
  let odd: Backend;
  let oddAnswer: (input: string[]) => unknown;
  beforeAll(async () => {
    fake = await startFakeEmbeddings();
    odd = await startBackend((_req, res, body) => json(res, 200, oddAnswer((JSON.parse(body) as { input: string[] }).input)));
  });
  afterAll(async () => {
    await fake?.close();
    await odd?.close();
  });

  it('embeds texts in order, asking for floats, with the usage the server reports', async () => {
    const p = new LlmProvider({ url: fake.url, model: 'chat', timeoutMs: 5_000, maxRetries: 0 });
    const e = await p.embed({ model: 'fake-embed', texts: ['my card was stolen', 'send money to my friend'] });
    expect(e.dims).toBe(FAKE_EMBEDDING_DIMS);
    expect(e.vectors).toEqual([Float32Array.from(fakeEmbedding('my card was stolen')), Float32Array.from(fakeEmbedding('send money to my friend'))]);
    expect(e).toMatchObject({ model: 'fake-embed', inputTokens: 9, estimated: false });
    expect(fake.calls.at(-1)).toMatchObject({ input: ['my card was stolen', 'send money to my friend'], model: 'fake-embed', format: 'float' });
    fake.behave({ promptTokens: -999_999 });
    try {
      expect(await p.embed({ model: 'fake-embed', texts: ['my card was stolen'] })).toMatchObject({ inputTokens: 5, estimated: true });
    } finally {
      fake.behave({});
    }
  });

  it('places each embedding by its index, and refuses answers that do not fit the texts', async () => {
    const p = new LlmProvider({ url: odd.url, model: 'chat', timeoutMs: 5_000, maxRetries: 0 });
    const ask = { model: 'e', texts: ['a', 'b'] };
    oddAnswer = () => ({
      data: [
        { index: 1, embedding: [0, 1] },
        { index: 0, embedding: [1, 0] },
      ],
    });
    const e = await p.embed(ask);
    expect(e.vectors.map((v) => [...v])).toEqual([
      [1, 0],
      [0, 1],
    ]);
    expect(e.estimated).toBe(true);
    const refused: [unknown, string][] = [
      [{ data: [{ index: 0, embedding: [1, 0] }] }, 'the provider answered 1 embeddings for 2 texts'],
      [{ data: [{ embedding: [1, 0] }, { embedding: [1, 0, 0] }] }, 'numbers of one length'],
      [{ data: [{ embedding: [1, null] }, { embedding: [1, 0] }] }, 'a value that is not a number'],
      // Finite as a double, Infinity as the float32 it is kept as.
      [{ data: [{ embedding: [1e39, 0] }, { embedding: [1, 0] }] }, 'not a finite 32-bit number'],
      [{ data: [{ embedding: [1, -3.5e38] }, { embedding: [1, 0] }] }, 'not a finite 32-bit number'],
      [{ data: [{ embedding: 'AAAA' }, { embedding: [1, 0] }] }, 'not a list of 1 to'],
      [{ data: [{ embedding: new Array(MAX_EMBEDDING_DIMS + 1).fill(0) }, { embedding: [1] }] }, `not a list of 1 to ${MAX_EMBEDDING_DIMS} numbers`],
      [
        {
          data: [
            { index: 0, embedding: [1] },
            { index: 0, embedding: [1] },
          ],
        },
        'repeated indexes',
      ],
      [{ nothing: true }, 'the provider answered no embeddings for 2 texts'],
    ];
    for (const [answer, message] of refused) {
      oddAnswer = () => answer;
      await expect(p.embed(ask), JSON.stringify(answer).slice(0, 80)).rejects.toThrow(message);
    }
  });

  it('retries a failing server within its retries, and keeps to a shorter deadline', async () => {
    const p = new LlmProvider({ url: fake.url, model: 'chat', timeoutMs: 5_000, maxRetries: 1 });
    fake.behave({ status: 503 });
    const before = fake.calls.length;
    await expect(p.embed({ model: 'e', texts: ['x'] })).rejects.toThrow('provider answered HTTP 503');
    expect(fake.calls.length - before).toBe(2);
    fake.behave({ delayMs: 30_000 });
    const started = performance.now();
    await expect(p.embed({ model: 'e', texts: ['x'], timeoutMs: 300, maxRetries: 0 })).rejects.toThrow('no answer within 300 ms');
    expect(performance.now() - started).toBeLessThan(3_000);
    fake.behave({});
  });
});
