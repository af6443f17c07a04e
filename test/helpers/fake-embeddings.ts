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

export interface FakeEmbeddings {
  /** The base URL to configure (ends in /v1). */
  url: string;
  /** Each call's texts, model, encoding format asked for and authorization header, in order. */
  calls: { input: string[]; model: string; format: string | undefined; authorization: string | undefined }[];
  /** How the next calls are answered: after a delay, or with an HTTP error status. */
  behave(b: { delayMs?: number; status?: number }): void;
  close(): Promise<void>;
}

export async function startFakeEmbeddings(): Promise<FakeEmbeddings> {
  const calls: FakeEmbeddings['calls'] = [];
  let behaviour: { delayMs?: number; status?: number } = {};
  const backend: Backend = await startBackend((req, res, body) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/embeddings')) return json(res, 404, { error: { message: 'not found' } });
    const parsed = JSON.parse(body) as { input: string | string[]; model: string; encoding_format?: string };
    const input = typeof parsed.input === 'string' ? [parsed.input] : parsed.input;
    calls.push({ input, model: parsed.model, format: parsed.encoding_format, authorization: req.headers.authorization });
    const { delayMs = 0, status = 200 } = behaviour;
    setTimeout(() => {
      if (res.destroyed) return;
      if (status !== 200) return json(res, status, { error: { message: `scripted ${status}` } });
      const tokens = input.reduce((n, t) => n + t.split(/\s+/).length, 0);
      json(res, 200, {
        object: 'list',
        model: parsed.model,
        data: input.map((t, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(t) })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    }, delayMs);
  });
  return {
    url: `${backend.url}/v1`,
    calls,
    behave: (b) => (behaviour = b),
    close: () => backend.close(),
  };
}
