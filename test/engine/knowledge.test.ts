// Knowledge passages: how documents are cut, and what BM25 search finds.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { KnowledgeIndex, splitPassages } from '../../server/src/engine/knowledge.js';

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
    const searched: string[] = [];
    const spy = index as unknown as { index: { search(q: string): unknown[] } };
    const original = spy.index.search.bind(spy.index);
    spy.index.search = (q: string) => {
      searched.push(q);
      return original(q);
    };
    index.search(text.slice(1000, 5000));
    expect(searched[0].split(' ')).toHaveLength(32);
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

  it('charges the compiled-version cache for what the index really holds', async () => {
    const text = corpus(1_000_000, 11);
    // A full collection before each reading, as the training worker gets one (no command-line flag needed).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage().heapUsed;
    const index = await KnowledgeIndex.build([{ id: 'big', text }]);
    gc();
    const held = process.memoryUsage().heapUsed - before;
    expect(index.bytes).toBeGreaterThanOrEqual(held);
  });
});
