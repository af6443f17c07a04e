import { describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { compileAgent, validateDefinition } from '../../server/src/engine/compile.js';
import { readFileSync } from 'node:fs';
import { MessageChannel } from 'node:worker_threads';
import {
  loadRouter,
  Router,
  FUSED_MODEL,
  ROUTER_STATE_FORMAT,
  RouterVectorsError,
  ROUTER_MODEL,
  storedFormat,
  storedPlan,
  storeRouter,
  tableEmbedder,
  trainingTexts,
} from '../../server/src/engine/router/index.js';
import { FAKE_EMBEDDING_DIMS, fakeEmbedding } from '../helpers/fake-embeddings.js';
import { route, runTurn, type TurnInput, type TurnResult } from '../../server/src/engine/run.js';
import { parseDefinition } from '../helpers/agents.js';

const small = [
  { name: 'order_status', examples: ['where is my order', 'track my package', 'has my order shipped', 'when will my parcel arrive'] },
  { name: 'billing', examples: ['I was charged twice', 'I want a refund', 'question about my invoice', 'update my payment method'] },
  { name: 'human', examples: ['talk to a human', 'I want a real person', 'speak to an agent', 'customer service please'] },
];

const phases = (id: string) => [{ id, say: id }];

async function agentOf(def: AgentDefinitionInput) {
  const parsed = parseDefinition(def);
  expect(validateDefinition(parsed)).toEqual([]);
  return compileAgent('00000000-0000-4000-8000-000000000002', 1, parsed);
}

describe('the router', () => {
  it('crosses threads as its stored layout, transferred not copied, and scores exactly as before', async () => {
    const router = await Router.train(small);
    const messages = ['where is my parcel', 'refund my money', 'speak to an agent', 'what is the weather'];
    const expected = messages.map((m) => router.score(m));
    const bytes = router.bytes;
    const state = Buffer.from(storeRouter(router));
    const { port1, port2 } = new MessageChannel();
    const received = new Promise<Uint8Array>((r) => port2.once('message', r));
    port1.postMessage(state, [state.buffer as ArrayBuffer]);
    const got = await received;
    const copy = loadRouter(Buffer.from(got.buffer, got.byteOffset, got.byteLength));
    port1.close();
    // Transferred: the sender's buffer is detached.
    expect(state.buffer.byteLength).toBe(0);
    expect(messages.map((m) => copy.score(m))).toEqual(expected);
    expect(copy.bytes).toBe(bytes);
  });

  it('sends paraphrases of a few examples to their capability', async () => {
    const router = await Router.train(small);
    for (const [message, expected] of [
      ['where is my parcel', 'order_status'],
      ['track my order please', 'order_status'],
      ['my package has not arrived', 'order_status'],
      ['I got charged two times', 'billing'],
      ['refund my money', 'billing'],
      ['can I speak to a person', 'human'],
      ['let me talk to someone human', 'human'],
    ]) {
      expect(router.score(message).scores[0].name, message).toBe(expected);
    }
  });

  it('sees a newly added example at once: a new version routes by it without a training step', async () => {
    const before = await Router.train(small);
    expect(before.score('cancel my subscription').scores[0].name).not.toBe('cancel');
    const after = await Router.train([...small, { name: 'cancel', examples: ['cancel my subscription', 'stop my plan'] }]);
    expect(after.score('cancel my subscription').scores[0].name).toBe('cancel');
  });

  it('calibrates its thresholds on held-out examples, and is deterministic', async () => {
    const a = await Router.train(small);
    const b = await Router.train(small);
    expect(a.calibration.method).toBe('held_out');
    expect(a.calibration.threshold).toBeGreaterThan(0);
    expect(a.calibration.threshold).toBeLessThan(1);
    expect(a.calibration.minSimilarity).toBeGreaterThan(0);
    expect(b.calibration).toEqual(a.calibration);
    expect(b.score('refund please')).toEqual(a.score('refund please'));
  });

  it('gives a message the same similarity whatever was scored before it, by this router or another', async () => {
    const router = await Router.train(small, { vectors: null });
    const other = await Router.train(
      [
        { name: 'refunds', examples: ['I want a refund of my money now please', 'refund the double charge on my last invoice'] },
        { name: 'cards', examples: ['my card was stolen yesterday evening', 'block my credit card immediately'] },
      ],
      { vectors: null },
    );
    // A message that is one of the examples is at cosine 1 from it (to the examples' quantisation).
    const alone = router.score('I want a refund').similarity;
    expect(alone).toBeCloseTo(1, 2);
    for (const m of ['I want a refund of my money now please', 'block my credit card immediately', 'refund the double charge']) other.score(m);
    router.score('question about my invoice and a refund for my package');
    expect(router.score('I want a refund').similarity).toBe(alone);
    expect(other.score('I want a refund').similarity).toBeLessThan(alone);
  });

  it('falls back to defaults when no example can be held out', async () => {
    const oos = { name: 'o', examples: ['gamma'] };
    const r = await Router.train([{ name: 'a', examples: ['alpha'] }, { name: 'b', examples: ['beta'] }, oos], { outOfScope: 'o' });
    expect(r.calibration).toEqual({ threshold: 0.3333, minSimilarity: 0.2, method: 'default' });
    // Without out-of-scope examples the background class is a third class, with a lower similarity floor.
    const bg = await Router.train([
      { name: 'a', examples: ['alpha'] },
      { name: 'b', examples: ['beta'] },
    ]);
    expect(bg.calibration).toEqual({ threshold: 0.3333, minSimilarity: 0.15, method: 'default' });
  });

  it('keeps held-out out-of-scope examples out of the calibration and learns them as a class', async () => {
    const oos = {
      name: 'fallback',
      examples: ['what is the weather', 'tell me a joke', 'who won the game', 'play some music', 'how tall is everest', 'what time is it'],
    };
    const r = await Router.train([...small, oos], { outOfScope: 'fallback' });
    expect(r.outOfScope).toBe('fallback');
    expect(r.score('tell me a funny joke').scores[0].name).toBe('fallback');
  });
});

describe('routing decisions', () => {
  const def: AgentDefinitionInput = {
    name: 'x',
    capabilities: small.map((c) => ({ ...c, phases: phases(c.name) })),
  };

  it('uses the calibrated thresholds when the author sets none, and says so', async () => {
    const agent = await agentOf(def);
    expect(agent.threshold).toBe(agent.router.calibration.threshold);
    expect(agent.minSimilarity).toBe(agent.router.calibration.minSimilarity);
    const d = route(agent, agent.router.score('track my package please'), null);
    expect(d.capability.name).toBe('order_status');
    expect(d.audit).toMatchObject({ strategy: 'classifier', reason: 'best_match', calibration: 'held_out', model: 'tfidf-logreg-v3' });
  });

  it('lets an explicit threshold and similarity floor win over the calibrated ones', async () => {
    const strict = await agentOf({ ...def, routing: { threshold: 0.999, min_similarity: 0 } });
    expect(strict.threshold).toBe(0.999);
    expect(strict.minSimilarity).toBe(0);
    const d = route(strict, strict.router.score('where might my order be'), null);
    expect(d.capability.name).toBe('fallback');
    expect(d.audit).toMatchObject({ strategy: 'fallback', reason: 'below_threshold', threshold: 0.999 });
    const lax = await agentOf({ ...def, routing: { threshold: 0, min_similarity: 0 } });
    expect(route(lax, lax.router.score('where might my order be'), null).capability.name).toBe('order_status');
  });

  it('turns away a message unlike every example', async () => {
    const agent = await agentOf(def);
    const d = route(agent, agent.router.score('qwxz vvkj'), null);
    expect(d.capability.name).toBe('fallback');
    expect(d.audit.reason).toBe('background');
    expect(d.audit.background).toBeGreaterThan((d.audit.selected as { score: number }).score);
  });

  it('sends off-topic messages to a fallback without examples, and keeps in-scope ones', async () => {
    const pizza = await agentOf({
      name: 'pizza',
      capabilities: [
        {
          name: 'order_pizza',
          examples: ['I want to order a pizza', 'can I get a large margherita', 'pizza delivery please', 'I would like two pepperoni pizzas'],
          phases: phases('order_pizza'),
        },
        { name: 'greeting', examples: ['hello', 'hi there', 'good morning'], phases: phases('greeting') },
      ],
    });
    const to = (m: string) => route(pizza, pizza.router.score(m), null).capability.name;
    for (const m of ['my bike has a flat tyre', 'is it sunny in madrid', 'who won the tennis yesterday', 'how do I reset my password', 'xkcd blorp'])
      expect(to(m), m).toBe('fallback');
    for (const m of ['can I order a pizza', 'one pepperoni pizza please', 'hello there']) expect(to(m), m).not.toBe('fallback');
  });

  it('answers not_entitled when the best match is gated, even when an eligible capability also matches', async () => {
    const agent = await agentOf({
      name: 'gated',
      capabilities: [
        { name: 'support', examples: ['I need help with my account', 'help me please', 'support request'], phases: phases('support') },
        {
          name: 'priority',
          examples: ['priority support line', 'call me back on the priority line', 'premium phone support'],
          requires: { tier: ['gold'] },
          phases: phases('priority'),
        },
      ],
    });
    const silver = { version: 'v1' as const, context: { entitlements: { tier: 'silver' } } };
    const d = route(agent, agent.router.score('I want the priority support line'), silver);
    expect(d.notEntitled).toBe(true);
    expect(d.audit.candidates).toEqual(expect.arrayContaining([expect.objectContaining({ capability: 'priority', eligible: false, reason: 'not_entitled' })]));
    const gold = { version: 'v1' as const, context: { entitlements: { tier: 'gold' } } };
    expect(route(agent, agent.router.score('I want the priority support line'), gold).capability.name).toBe('priority');
  });
});

describe('mid-flow switching', () => {
  const flowDef = (switching?: { enabled?: boolean; threshold?: number }): AgentDefinitionInput => ({
    name: 'switch',
    routing: switching ? { switching } : undefined,
    capabilities: [
      {
        name: 'order_status',
        examples: small[0].examples,
        phases: [
          { id: 'ask', say: 'Order number?', collect: { slot: 'order_id', pattern: '^[0-9]{6}$' } },
          { id: 'done', say: 'ok', end: 'completed' },
        ],
      },
      { name: 'human', examples: small[2].examples, phases: [{ id: 'handoff', say: 'Handing over.', end: 'escalated' }] },
      { name: 'billing', examples: small[1].examples, phases: phases('billing') },
    ],
  });

  function run(agent: Awaited<ReturnType<typeof agentOf>>, prior: TurnInput['prior'], message: string): TurnResult {
    const gen = runTurn({
      agent,
      prior,
      conversationId: 'c',
      message,
      context: null,
      userId: null,
      turnIndex: 2,
      now: '2026-11-22T10:00:00.000Z',
      secrets: {},
      score: (m) => agent.router.score(m),
    });
    const step = gen.next();
    if (!step.done) throw new Error('unexpected request');
    return step.value;
  }
  const after = (r: TurnResult): TurnInput['prior'] => ({ status: r.status, capability: r.capability.name, phase: r.phase, flow: r.flow, turnCount: 2 });

  it('moves a waiting collect to a capability the message plainly asks for, audited with the reason', async () => {
    const agent = await agentOf(flowDef());
    const waiting = run(agent, null, 'where is my order');
    expect(waiting.flow.wait).toBe('collecting');
    const moved = run(agent, after(waiting), 'I want to talk to a human');
    expect(moved.capability.name).toBe('human');
    expect(moved.status).toBe('escalated');
    const decision = moved.audit.find((a) => a.type === 'routing_decision')!;
    expect(decision.data).toMatchObject({ reason: 'switch', from: { capability: 'order_status', phase: 'ask' }, switch_threshold: 0.8 });
  });

  it('asks again when the message is not a plain request for something else', async () => {
    const agent = await agentOf(flowDef());
    const waiting = run(agent, null, 'where is my order');
    const retry = run(agent, after(waiting), 'hmm not sure');
    expect(retry.capability.name).toBe('order_status');
    expect(retry.flow.attempts).toBe(1);
    expect(retry.audit.some((a) => a.type === 'routing_decision')).toBe(false);
  });

  it('can be turned off, or made stricter, per agent', async () => {
    const off = await agentOf(flowDef({ enabled: false }));
    const w1 = run(off, null, 'where is my order');
    expect(run(off, after(w1), 'I want to talk to a human').capability.name).toBe('order_status');
    const strict = await agentOf(flowDef({ threshold: 1 }));
    const w2 = run(strict, null, 'where is my order');
    expect(run(strict, after(w2), 'I want to talk to a human').capability.name).toBe('order_status');
  });

  it('never switches a message that fills the slot', async () => {
    const agent = await agentOf(flowDef());
    const waiting = run(agent, null, 'where is my order');
    expect(run(agent, after(waiting), '123456').phase).toBe('done');
  });
});

describe('stored routers', () => {
  const caps = [
    { name: 'billing', examples: ['question about my bill', 'I was charged twice', 'refund my payment', 'invoice is wrong'] },
    { name: 'shipping', examples: ['where is my parcel', 'track my package', 'delivery is late', 'has my order shipped'] },
    { name: 'fallback', examples: ['tell me a joke', 'what is the weather', 'who won the game'] },
  ];
  const messages = ['my invoice has a mistake', 'the parcel never came', 'sing me a song', ''];

  it('load what was stored and score every message exactly as the router that was trained', async () => {
    const trained = await Router.train(caps, { outOfScope: 'fallback' });
    const bytes = storeRouter(trained);
    const loaded = loadRouter(bytes);
    for (const m of messages) expect(loaded.score(m)).toEqual(trained.score(m));
    expect(loaded.calibration).toEqual(trained.calibration);
    // Stored again, a loaded router gives the same bytes.
    expect(storeRouter(loaded).equals(bytes)).toBe(true);
    // Bytes that do not start on an 8-byte boundary (a slice of a larger buffer) are read too.
    const shifted = Buffer.alloc(bytes.length + 3);
    bytes.copy(shifted, 3);
    const moved = loadRouter(shifted.subarray(3));
    for (const m of messages) expect(moved.score(m)).toEqual(trained.score(m));
  });

  it('score as the full-precision model they were quantised from, within a hundredth', async () => {
    let float!: (m: string) => Float64Array;
    const stored = loadRouter(storeRouter(await Router.train(caps, { outOfScope: 'fallback', vectors: null, float: (f) => (float = f) })), null);
    const probes = [...messages, ...caps.flatMap((c) => c.examples), 'refund for the late parcel', 'who is the fallback'];
    let largest = 0;
    for (const m of probes) {
      const p = float(m);
      const scored = new Map(stored.score(m).scores.map((s) => [s.name, s.score]));
      caps.forEach((c, i) => {
        const d = Math.abs(scored.get(c.name)! - p[i]);
        largest = Math.max(largest, d);
        expect(d, `${m}: ${c.name}`).toBeLessThan(0.01);
      });
    }
    // The probabilities move: a test of a router that always answered the same would not show it.
    expect(new Set(probes.map((m) => stored.score(m).scores[0].name)).size).toBe(3);
    expect(largest).toBeGreaterThan(0);
  });

  it('refuses bytes that are not a whole stored router', async () => {
    const bytes = storeRouter(await Router.train(caps, { outOfScope: 'fallback' }));
    expect(() => loadRouter(Buffer.from('not a router'))).toThrow(/not a stored router/);
    expect(() => loadRouter(bytes.subarray(0, bytes.length - 16))).toThrow(/cut short|outside the bytes/);
    expect(storedFormat(Buffer.from('not a router'))).toBe(0);
  });

  /** Stored bytes with their header changed by `edit` (the sections moved to follow it). */
  const withHeader = (bytes: Buffer, edit: (h: Record<string, any>) => void): Buffer => {
    const length = bytes.readUInt32LE(4);
    const header = JSON.parse(bytes.toString('utf8', 8, 8 + length)) as Record<string, any>;
    edit(header);
    const json = Buffer.from(JSON.stringify(header));
    const body = bytes.subarray(Math.ceil((8 + length) / 8) * 8);
    const start = Math.ceil((8 + json.length) / 8) * 8;
    const out = Buffer.alloc(start + body.length);
    out.writeUInt32LE(bytes.readUInt32LE(0), 0);
    out.writeUInt32LE(json.length, 4);
    json.copy(out, 8);
    body.copy(out, start);
    return out;
  };

  it('refuse a header that claims more than its bytes hold, before building anything from it', async () => {
    const bytes = storeRouter(await Router.train(caps, { outOfScope: 'fallback' }));
    expect(withHeader(bytes, () => undefined).equals(bytes)).toBe(true);
    const refused: [string, (h: Record<string, any>) => void, RegExp][] = [
      ['ten million examples of a class', (h) => (h.perClass[0] = 10_000_000), /examples do not add up/],
      ['examples per class that are not counts', (h) => (h.perClass[0] = -1), /header is not valid \(perClass/],
      ['a section before the bytes', (h) => (h.sections.w.offset = -8), /header|section table is not valid/],
      ['a section offset that is not a number', (h) => (h.sections.w.offset = 'x'), /section table is not valid/],
      ['a section offset that is not aligned', (h) => (h.sections.w.offset += 4), /not aligned/],
      ['a section past the bytes', (h) => (h.sections.idf.length = 1e12), /outside the bytes/],
      ['sections over each other', (h) => (h.sections.b.offset = h.sections.w.offset), /overlap/],
      ['a capability without its examples', (h) => h.names.push('extra'), /examples per class for every capability/],
      ['an out-of-scope capability it does not have', (h) => (h.outOfScope = 'nobody'), /out-of-scope capability/],
      ['a calibration that is not a number', (h) => (h.calibration.threshold = '0.5'), /calibration\.threshold/],
      ['vectors of a thousand million dimensions', (h) => (h.vectors = { id: 'embeddings:x', dims: 1e9, lexical: 1, dense: 0 }), /vectors\.dims/],
    ];
    for (const [what, edit, message] of refused) expect(() => loadRouter(withHeader(bytes, edit)), what).toThrow(message);
    // 200 bytes of format 1 claiming ten million examples: refused by the count, with nothing allocated for them.
    const v1 = readFileSync(new URL('../fixtures/router-format-1.bin', import.meta.url));
    const hostile = withHeader(v1, (h) => (h.perClass = [10_000_000, 0, 0])).subarray(0, 200);
    const header = hostile.readUInt32LE(4);
    expect(() => loadRouter(withHeader(v1, (h) => (h.perClass = [10_000_000, 0, 0])))).toThrow(/examples do not add up/);
    expect(() => loadRouter(hostile)).toThrow(header > 192 ? /header is cut short/ : /outside the bytes/);
  });

  it('refuse weights that are not numbers, and example features outside the vocabulary', async () => {
    const bytes = storeRouter(await Router.train(caps, { outOfScope: 'fallback' }));
    const header = JSON.parse(bytes.toString('utf8', 8, 8 + bytes.readUInt32LE(4))) as { sections: Record<string, { offset: number; length: number }> };
    const body = Math.ceil((8 + bytes.readUInt32LE(4)) / 8) * 8;
    const nan = Buffer.from(bytes);
    nan.writeFloatLE(Number.NaN, body + header.sections.b.offset);
    expect(() => loadRouter(nan)).toThrow(/weights that are not numbers/);
    const far = Buffer.from(bytes);
    far.writeUInt16LE(65535, body + header.sections.idx.offset);
    expect(() => loadRouter(far)).toThrow(/outside its vocabulary/);
    const col = Buffer.from(bytes);
    col.writeInt32LE(-5, body + header.sections.cols.offset);
    expect(() => loadRouter(col)).toThrow(/vocabulary column outside its weights/);
  });

  it("load into a buffer of their own: a small router's views can never reach another request's memory", async () => {
    const bytes = storeRouter(await Router.train(caps.slice(0, 2)));
    // As a small decoded answer lies in Node's shared pool: other data before and after it, at an aligned offset.
    const pool = new Uint8Array(bytes.length + 64).fill(0xab);
    pool.set(bytes, 32);
    const loaded = loadRouter(Buffer.from(pool.buffer, 32, bytes.length));
    expect(loaded.stored.buffer).not.toBe(pool.buffer);
    expect(loaded.stored.byteOffset).toBe(0);
    expect(loaded.stored.buffer.byteLength).toBe(loaded.stored.length);
    for (const m of messages) expect(loaded.score(m)).toEqual(loadRouter(bytes).score(m));
  });

  it('read a router stored in format 1 (full precision), routing its messages as it did', () => {
    // test/fixtures/router-format-1.bin: these capabilities, trained and stored by format 1.
    const v1 = readFileSync(new URL('../fixtures/router-format-1.bin', import.meta.url));
    expect(storedFormat(v1)).toBe(1);
    const loaded = loadRouter(v1);
    expect(storedFormat(storeRouter(loaded))).toBe(ROUTER_STATE_FORMAT);
    // What format 1 answered for these messages.
    const before = [
      { best: 'billing', score: 0.7405, similarity: 0.4814 },
      { best: 'shipping', score: 0.5434, similarity: 0.4732 },
      { best: 'fallback', score: 0.6899, similarity: 0.403 },
      { best: 'billing', score: 0.4682, similarity: 0 },
    ];
    messages.forEach((m, i) => {
      const s = loaded.score(m);
      expect(s.scores[0].name, m).toBe(before[i].best);
      expect(Math.abs(s.scores[0].score - before[i].score), m).toBeLessThan(0.01);
      expect(Math.abs(s.similarity - before[i].similarity), m).toBeLessThan(0.01);
    });
  });

  it('hold weights and example values at one byte each: smaller than format 1, and the same router', async () => {
    const trained = await Router.train(caps, { outOfScope: 'fallback' });
    const v1 = readFileSync(new URL('../fixtures/router-format-1.bin', import.meta.url));
    // Vocabulary keys (8 bytes each) dominate a router this small; weights are most of a large one.
    expect(storeRouter(trained).length).toBeLessThan(v1.length * 0.75);
    // The same training stored by either format: converting format 1 gives the current bytes.
    expect(storeRouter(loadRouter(v1)).equals(storeRouter(trained))).toBe(true);
  });
});

describe('what is done with a stored router (storedPlan)', () => {
  // Every format ever written, of these capabilities under this fallback (test/fixtures).
  const caps = [
    { name: 'billing', examples: ['question about my bill', 'I was charged twice', 'refund my payment', 'invoice is wrong'] },
    { name: 'shipping', examples: ['where is my parcel', 'track my package', 'delivery is late', 'has my order shipped'] },
    { name: 'fallback', examples: ['tell me a joke', 'what is the weather', 'who won the game'] },
  ];
  const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));
  const expected: { model: string; caps: typeof caps; outOfScope: string | null } = { model: ROUTER_MODEL, caps, outOfScope: 'fallback' };
  const plan = (format: number, file: string, over: Partial<typeof expected> = {}, model = ROUTER_MODEL) =>
    storedPlan({ format, model, state: fixture(file) }, { ...expected, ...over }, null);

  it('uses the current layout, converts the older ones, retrains another model’s, and trains when none is stored', () => {
    expect(plan(3, 'router-format-3.bin').plan).toBe('use');
    expect(plan(2, 'router-format-2.bin').plan).toBe('convert');
    expect(plan(1, 'router-format-1.bin').plan).toBe('convert');
    expect(plan(3, 'router-format-3.bin', {}, 'tfidf-logreg-v2').plan).toBe('retrain');
    expect(plan(2, 'router-format-2.bin', {}, 'tfidf-logreg-v2').plan).toBe('retrain');
    expect(storedPlan(null, expected, null)).toEqual({ plan: 'train', reason: 'none stored' });
    // Converted, format 2 is the current layout's bytes.
    expect(storeRouter((plan(2, 'router-format-2.bin') as { router: Router }).router).equals(fixture('router-format-3.bin'))).toBe(true);
    // Each format's router routes as the current one does.
    const current = (plan(3, 'router-format-3.bin') as { router: Router }).router;
    for (const file of ['router-format-2.bin', 'router-format-1.bin']) {
      const r = (plan(file === 'router-format-1.bin' ? 1 : 2, file) as { router: Router }).router;
      for (const m of ['my invoice has a mistake', 'the parcel never came', 'sing me a song'])
        expect(r.score(m).scores[0].name, `${file}: ${m}`).toBe(current.score(m).scores[0].name);
    }
    // A router of server embeddings loads without the embeddings at hand: each message's comes with it.
    const semantic = storedPlan(
      { format: 3, model: `${FUSED_MODEL}+embeddings:fake-embed`, state: fixture('router-format-3-embeddings.bin') },
      { ...expected, model: `${FUSED_MODEL}+embeddings:fake-embed` },
      null,
    );
    expect(semantic.plan).toBe('use');
    expect((semantic as { router: Router }).router.dims).toBe(FAKE_EMBEDDING_DIMS);
  });

  it('trains when the bytes are not what the row says, cannot be read, or are not the definition’s capabilities', () => {
    const train = (p: ReturnType<typeof storedPlan>) => (p.plan === 'train' ? p.reason : `not trained: ${p.plan}`);
    expect(train(plan(3, 'router-format-2.bin'))).toMatch(/format 3, which this process does not read/);
    expect(train(plan(4, 'router-format-3.bin'))).toMatch(/format 4/);
    expect(train(storedPlan({ format: 3, model: ROUTER_MODEL, state: fixture('router-format-3.bin').subarray(0, 100) }, expected, null))).toMatch(
      /cut short|outside/,
    );
    // Names another definition gave its capabilities: it would route to capabilities this one does not have.
    expect(train(plan(3, 'router-format-3.bin', { caps: [caps[1], caps[0], caps[2]] }))).toBe('its capabilities are not the definition’s');
    expect(train(plan(3, 'router-format-3.bin', { caps: caps.map((c) => ({ ...c, name: `${c.name}_x` })), outOfScope: 'fallback_x' }))).toBe(
      'its capabilities are not the definition’s',
    );
    expect(train(plan(3, 'router-format-3.bin', { outOfScope: null }))).toBe('its capabilities are not the definition’s');
    expect(train(plan(1, 'router-format-1.bin', { caps: caps.slice(0, 2) }))).toBe('its capabilities are not the definition’s');
  });
});

describe('a router of server embeddings', () => {
  const caps = [
    { name: 'balance', examples: ['what is my balance', 'show my account balance', 'how much is in my account', 'check my balance please'] },
    { name: 'card_lost', examples: ['I lost my card', 'my card was stolen', 'block my card', 'report a missing card'] },
    { name: 'transfer', examples: ['send money to my friend', 'transfer funds to savings', 'move money between accounts', 'wire cash to my brother'] },
  ];
  const unit = (text: string) => {
    const v = Float32Array.from(fakeEmbedding(text));
    const n = Math.hypot(...v) || 1;
    return v.map((x) => x / n);
  };
  const table = () => {
    const texts = [...new Set(trainingTexts(caps, null))];
    const data = new Float32Array(texts.length * FAKE_EMBEDDING_DIMS);
    texts.forEach((t, i) => data.set(unit(t), i * FAKE_EMBEDDING_DIMS));
    return tableEmbedder('embeddings:fake', FAKE_EMBEDDING_DIMS, texts, data);
  };

  it('is the same bytes from the same embeddings, loads without word vectors, and scores a message by the embedding it is given', async () => {
    const a = await Router.train(caps, { vectors: table() });
    const b = await Router.train(caps, { vectors: table() });
    expect(storeRouter(a).equals(storeRouter(b))).toBe(true);
    expect(a.model).toBe(`${FUSED_MODEL}+embeddings:fake`);
    const loaded = loadRouter(Buffer.from(storeRouter(a)), null);
    const paraphrase = 'someone pinched my plastic';
    expect(loaded.score(paraphrase, unit(paraphrase))).toEqual(a.score(paraphrase, unit(paraphrase)));
    expect(loaded.score(paraphrase, unit(paraphrase)).scores[0].name).toBe('card_lost');
    // Without the message's embedding, or with one of another size, it cannot score.
    expect(() => loaded.score(paraphrase)).toThrow(RouterVectorsError);
    expect(() => loaded.score(paraphrase, new Float32Array(3))).toThrow(`an embedding of 3 numbers for a router of ${FAKE_EMBEDDING_DIMS}`);
  });
});
