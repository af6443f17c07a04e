// The grounding check of a generative answer against the passages it cites.
import { describe, expect, it } from 'vitest';
import { checkGrounding } from '../../server/src/engine/grounding.js';

const refunds = {
  id: 'help#2',
  title: 'Refunds',
  text: 'Refunds go back to the card you paid with within 5 business days of the return reaching our warehouse.',
};
const warranty = { id: 'help#3', title: 'Warranty', text: 'Every product has a two-year warranty from the day of delivery.' };
const found = [refunds, warranty];

describe('checkGrounding', () => {
  it('passes claims the cited passage holds, in other words of the same stems, and sentences that claim nothing', () => {
    const r = checkGrounding('Hello! Refunds reach your card within 5 business days [help#2]. Anything else?', found, 0.6);
    expect(r.supported).toBe(true);
    expect(r.cited).toEqual(['help#2']);
    expect(r.claims).toEqual([{ sentence: 'Refunds reach your card within 5 business days.', passage: 'help#2', support: 1 }]);
  });

  it('refuses an answer that cites nothing, a figure the passage does not hold, and a claim the cited passage does not make', () => {
    expect(checkGrounding('Refunds reach your card within 5 business days.', found, 0.6)).toMatchObject({
      supported: false,
      claims: [{ passage: null, support: 0 }],
    });
    const figure = checkGrounding('Refunds reach your card within 3 business days [help#2].', found, 0.6);
    expect(figure).toMatchObject({ supported: false, claims: [{ passage: 'help#2', support: 0, missing_numbers: ['3'] }] });
    const wrong = checkGrounding('We repair broken espresso machines for free at every shop [help#3].', found, 0.6);
    expect(wrong.supported).toBe(false);
    expect(wrong.claims[0].support).toBeLessThan(0.6);
    // A sentence is judged by the passage it names, not by another the answer cites.
    const crossed = checkGrounding('Every product has a two-year warranty [help#2]. Refunds take 5 business days [help#2].', found, 0.6);
    expect(crossed.supported).toBe(false);
  });

  it('judges each sentence against every cited passage when it names none itself', () => {
    const r = checkGrounding('Every product has a two-year warranty from delivery. Refunds take 5 business days. [help#2] [help#3]', found, 0.6);
    expect(r.supported).toBe(true);
    expect(r.claims.map((c) => c.passage)).toEqual(['help#3', 'help#2']);
  });
});
