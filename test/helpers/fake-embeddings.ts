// A scripted OpenAI-compatible embeddings server on loopback (`POST /v1/embeddings`). Its
// "model" knows a few concepts: every word of a concept (a synonym list) adds that concept's
// dimension, and any other word a little of one of a few dimensions chosen by its letters. So
// "someone pinched my plastic" and "my card was stolen" embed alike, as a sentence encoder's
// paraphrases do, while sharing no word. It records each call and can be slowed down or failed.
import { json, startBackend, type Backend } from './servers.js';

const CONCEPTS: string[][] = [
  ['card', 'cards', 'plastic', 'debit', 'credit'],
  ['lost', 'stolen', 'pinched', 'nicked', 'missing', 'swiped', 'misplaced'],
  ['balance', 'funds', 'owe', 'left', 'total', 'much'],
  ['account', 'accounts', 'checking', 'savings', 'bank'],
  ['send', 'transfer', 'wire', 'move', 'pay', 'shift'],
  ['money', 'cash', 'dough', 'dollars', 'quid', 'bucks'],
  ['friend', 'brother', 'mum', 'sister', 'someone', 'person'],
  ['block', 'freeze', 'stop', 'cancel', 'lock'],
];
const OTHER = 6;
export const FAKE_EMBEDDING_DIMS = CONCEPTS.length + OTHER;

const conceptOf = new Map<string, number>();
CONCEPTS.forEach((words, c) => words.forEach((w) => conceptOf.set(w, c)));

/** The fake model's embedding of a text (not normalised: the server normalises what it is given). */
export function fakeEmbedding(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIMS).fill(0);
  for (const w of text.toLowerCase().match(/[a-z']+/g) ?? []) {
    const c = conceptOf.get(w);
    if (c !== undefined) v[c] += 1;
    else v[CONCEPTS.length + ([...w].reduce((h, ch) => h * 31 + ch.charCodeAt(0), 7) % OTHER)] += 0.2;
  }
  return v;
}

/** How the fake answers: late, with an error status, or with answers a broken or changed model server gives. */
export interface Behaviour {
  delayMs?: number;
  status?: number;
  /** Embeddings of this many numbers (the concepts' padded with zeros: the same directions, another model's length). */
  dims?: number;
  /** The first number of every embedding (1e39 is finite as JSON and as a double, not as a float32). */
  first?: number;
  /** The usage reported (a broken server's negative count). */
  promptTokens?: number;
}

export interface FakeEmbeddings {
  /** The base URL to configure (ends in /v1). */
  url: string;
  /** Each call's texts, model, encoding format asked for and authorization header, in order. */
  calls: { input: string[]; model: string; format: string | undefined; authorization: string | undefined }[];
  /** How the next calls are answered. */
  behave(b: Behaviour): void;
  /** Holds every answer until release() (a training that cannot finish yet). */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startFakeEmbeddings(): Promise<FakeEmbeddings> {
  const calls: FakeEmbeddings['calls'] = [];
  let behaviour: Behaviour = {};
  let held: Promise<void> | null = null;
  let release = () => {};
  const backend: Backend = await startBackend((req, res, body) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/embeddings')) return json(res, 404, { error: { message: 'not found' } });
    const parsed = JSON.parse(body) as { input: string | string[]; model: string; encoding_format?: string };
    const input = typeof parsed.input === 'string' ? [parsed.input] : parsed.input;
    calls.push({ input, model: parsed.model, format: parsed.encoding_format, authorization: req.headers.authorization });
    const { delayMs = 0, status = 200, dims, first, promptTokens } = behaviour;
    const embedding = (t: string) => {
      const v = fakeEmbedding(t);
      while (dims !== undefined && v.length < dims) v.push(0);
      if (dims !== undefined) v.length = dims;
      if (first !== undefined) v[0] = first;
      return v;
    };
    const answer = () => {
      if (res.destroyed) return;
      if (status !== 200) return json(res, status, { error: { message: `scripted ${status}` } });
      const tokens = promptTokens ?? input.reduce((n, t) => n + t.split(/\s+/).length, 0);
      json(res, 200, {
        object: 'list',
        model: parsed.model,
        data: input.map((t, index) => ({ object: 'embedding', index, embedding: embedding(t) })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    };
    const wait = held;
    setTimeout(() => (wait ? void wait.then(answer) : answer()), delayMs);
  });
  return {
    url: `${backend.url}/v1`,
    calls,
    behave: (b) => (behaviour = b),
    hold: () => {
      held ??= new Promise((r) => (release = r));
    },
    release: () => {
      release();
      held = null;
    },
    close: () => {
      release();
      return backend.close();
    },
  };
}
