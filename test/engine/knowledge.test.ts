// Knowledge passages: how documents are cut, and what BM25 search finds.
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

  it('finds the passage that answers a question, by stems, with the title counted', () => {
    const index = new KnowledgeIndex([
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
