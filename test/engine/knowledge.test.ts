// Knowledge passages: how documents are cut, and what BM25 search finds.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { matchingSentences, rarity, splitPassages } from '../../server/src/engine/knowledge.js';
import { KnowledgeIndex } from '../../server/src/engine/knowledge-index.js';

describe('knowledge passages', () => {
  it('start at headings, join short paragraphs, and cut long ones near 800 characters at sentences', () => {
    const long = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} about delivery windows.`).join(' ');
    const passages = splitPassages({
      id: 'policy',
      title: 'Policy',
      text: `Intro line one.\n\nIntro line two.\n\n# Returns\n\nReturn within 30 days.\n\n## Refunds ##\n\nRefunds in 5 days.\n\n${long}`,
    });
    expect(passages.slice(0, 3)).toEqual([
      { id: 'policy#1', title: 'Policy', text: 'Intro line one.\n\nIntro line two.' },
      { id: 'policy#2', title: 'Returns', text: 'Return within 30 days.' },
      expect.objectContaining({ id: 'policy#3', title: 'Refunds' }),
    ]);
    expect(passages.length).toBeGreaterThan(3);
    for (const p of passages) expect(p.text.length).toBeLessThanOrEqual(800);
    // Cut after a sentence, not inside a word.
    for (const p of passages.slice(3)) expect(p.text).toMatch(/\.$/);
    expect(passages.map((p) => p.text).join(' ')).toContain('Sentence number 39 about delivery windows.');
  });

  it('finds the passage that answers a question, by stems, with the title counted', async () => {
    const index = await KnowledgeIndex.build([
      { id: 'returns', title: 'Returns', text: 'Items can be returned within 30 days of delivery.\n\n# Refunds\n\nRefunds are paid to the original card.' },
      { id: 'shipping', text: 'Standard shipping takes 3 to 5 working days.' },
    ]);
    expect(index.size).toBe(3);
    const found = index.search('when will my refund be paid?');
    expect(found[0].passage.id).toBe('returns#2');
    expect(found[0].score).toBeGreaterThan(0);
    expect(index.search('how long does shipping take')[0].passage.id).toBe('shipping#1');
    expect(index.search('the of and')).toEqual([]);
    expect(index.search('returning an item', 1)).toHaveLength(1);
  });
});

describe('confidence and quotes', () => {
  const passages = [
    { id: 'h#1', title: 'Refunds', text: 'Refunds go back to the card you paid with within 5 business days. Store credit is issued at once.' },
    { id: 'h#2', title: 'Shipping', text: 'Standard delivery takes three to five business days.' },
  ];
  // English probabilities of a few words, as the word vectors give them: the question's framing is common, its subject rare.
  const english: Record<string, number> = { how: 1e-3, long: 5e-4, take: 4e-4, refund: 5e-6, gift: 2e-5, card: 4e-5, expire: 7e-6 };
  const prior = (w: string) => rarity(english[w] ?? null);

  it("weighs a question's words by rarity: its framing counts little, a subject the documents lack counts much", async () => {
    const index = await KnowledgeIndex.of(passages, prior);
    const [refund] = index.search('how long does a refund take?');
    expect(refund.passage.id).toBe('h#1');
    expect(refund.confidence).toBeGreaterThan(0.8);
    // "card" is in the documents, "gift" and "expire" are not: the best passage holds little of the question.
    const [gift] = index.search('do gift cards expire?');
    expect(gift.confidence).toBeLessThan(0.3);
    // Without the prior every word weighs the same, and "how long … take" drags the answerable question down.
    const flat = await KnowledgeIndex.of(passages);
    expect(flat.search('how long does a refund take?')[0].confidence).toBeLessThan(0.5);
    expect(rarity(null)).toBe(1);
  });

  it("quotes the passage's sentences that hold the question's words, in order, and only those", () => {
    const text = 'Refunds go back to the card you paid with. Store credit is issued at once. Refunds take 5 days.';
    expect(matchingSentences(text, 'how long do refunds take to reach my card?')).toBe('Refunds go back to the card you paid with. Refunds take 5 days.');
    expect(matchingSentences(text, 'store credit?')).toBe('Store credit is issued at once.');
    expect(matchingSentences(text, 'unrelated words')).toBe('Refunds go back to the card you paid with.');
  });
});

describe('knowledge budgets', () => {
  /** Text of a varied vocabulary (what makes an index large and a long query slow). */
  function corpus(chars: number, seed: number): string {
    let s = '';
    let x = seed;
    const next = () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
    while (s.length < chars) {
      s += `# Section ${s.length}\n\n`;
      for (let w = 0; w < 120; w++)
        s += `${Array.from({ length: 3 + Math.floor(next() * 6) }, () => String.fromCharCode(97 + Math.floor(next() ** 2 * 26))).join('')} `;
      s += '.\n\n';
    }
    return s.slice(0, chars);
  }

  it('searches only the first 32 distinct terms of a long message, so the work does not grow with the message', async () => {
    const text = corpus(200_000, 7);
    const index = await KnowledgeIndex.build([{ id: 'big', text }]);
    const work = { terms: 0, postings: 0 };
    expect(index.search(text.slice(1000, 5000), 4, work).length).toBeGreaterThan(0);
    expect(work.terms).toBe(32);
    // Each term's postings are read once: at most one a passage.
    expect(work.postings).toBeGreaterThan(0);
    expect(work.postings).toBeLessThanOrEqual(32 * index.size);
    const short = { terms: 0, postings: 0 };
    index.search(text.slice(1000, 1100), 4, short);
    expect(short.terms).toBeLessThan(32);
    expect(short.postings).toBeLessThan(work.postings);
  });

  it('builds the index a few passages at a time, letting the event loop turn meanwhile', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      const index = await KnowledgeIndex.build([{ id: 'big', text: corpus(400_000, 3) }]);
      expect(index.size).toBeGreaterThan(400);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(5);
  });

  it('charges the compiled-version cache for what the index really holds, and not much more', async () => {
    // A full collection before each reading, as the training worker gets one (no command-line flag needed).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    // The postings are typed arrays, held outside the heap.
    const used = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    const before = used();
    const index = await KnowledgeIndex.build([{ id: 'big', text: corpus(1_000_000, 11) }]);
    index.search('a question');
    gc();
    const held = used() - before;
    expect(index.bytes).toBeGreaterThanOrEqual(held);
    expect(index.bytes).toBeLessThan(3 * held);
  });
  it('reads the postings of terms every passage holds only up to a budget, and still ranks the passage that holds them most first', async () => {
    const vocabulary =
      'order refund delivery parcel invoice account password payment return warranty card shipping address store credit voucher price discount tracking courier label receipt exchange cancel login email stock size colour gift basket checkout'.split(
        ' ',
      );
    const all = vocabulary.join(' ');
    const passages = Array.from({ length: 20_000 }, (_, i) => ({ id: `p#${i + 1}`, title: null, text: i === 12_345 ? `${all} ${all} ${all}` : all }));
    const index = await KnowledgeIndex.of(passages);
    const work = { terms: 0, postings: 0 };
    const found = index.search(vocabulary.join(' '), 3, work);
    expect(work.terms).toBe(32);
    // Every term's postings would be 640,000; the common ones only re-rank the candidates.
    expect(work.postings).toBeLessThanOrEqual(300_000 + 20_000);
    expect(found.map((f) => f.passage.id)).toEqual(['p#12346', 'p#1', 'p#2']);
    expect(found[0].confidence).toBe(1);
    // A passage the caller leaves out is not among them.
    expect(index.search(vocabulary.join(' '), 1, undefined, (p) => p.id !== 'p#12346')[0].passage.id).toBe('p#1');
  });
});
