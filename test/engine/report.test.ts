// Routing warnings (returned by PUT) and the routing report of `npm run agents -- eval`.
import { describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { crossValidate, evaluateLabelled, routingWarnings, summarise } from '../../server/src/engine/report.js';
import { parseDefinition } from '../helpers/agents.js';

const say = (name: string) => [{ id: 'p', say: name }];

const shop: AgentDefinitionInput = {
  name: 'Shop',
  capabilities: [
    {
      name: 'order_status',
      examples: ['where is my order', 'track my order', 'has my parcel shipped', 'when will my delivery arrive', 'my package is late', 'order tracking please'],
      phases: say('order_status'),
    },
    {
      name: 'refund',
      examples: [
        'I want a refund',
        'give me my money back',
        'refund my purchase',
        'how do I get a refund',
        'return this item for a refund',
        'where is my order',
      ],
      phases: say('refund'),
    },
    { name: 'hours', examples: ['when are you open', 'opening hours'], phases: say('hours') },
  ],
};

describe('routing warnings', () => {
  it('names thin capabilities, examples under two capabilities, and examples nearer another capability', () => {
    const w = routingWarnings(parseDefinition(shop));
    expect(w).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'thin_capability', capability: 'hours' }),
        expect.objectContaining({ code: 'duplicate_example', capability: 'refund', other: 'order_status', example: 'where is my order' }),
        expect.objectContaining({ code: 'example_closer_to_other', capability: 'refund', other: 'order_status', example: 'where is my order' }),
      ]),
    );
    // Every message says what to do or what is wrong, in words.
    for (const x of w) expect(x.message.length).toBeGreaterThan(20);
  });

  it('warns of a fallback whose few or placeholder examples would replace the class of everyday messages', () => {
    const withFallback = (examples?: string[]) =>
      routingWarnings(
        parseDefinition({
          ...shop,
          capabilities: [...shop.capabilities.slice(0, 1), { name: 'fallback', ...(examples ? { examples } : {}), phases: say('Sorry.') }],
        }),
      ).filter((w) => w.code === 'thin_fallback');
    expect(withFallback(['something else', 'none of these'])).toEqual([
      expect.objectContaining({ capability: 'fallback', message: expect.stringContaining('placeholder examples ("something else", "none of these")') }),
    ]);
    expect(withFallback(['cancel my gym membership', 'sell me a car'])).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/has 2 examples .*leave them out, or give 8 or more/) }),
    ]);
    // Eight real ones with a placeholder among them still warn; none, or eight real ones, do not.
    const real = [
      'cancel my gym membership',
      'sell me a car',
      'book a flight',
      'fix my boiler',
      'what is the capital of peru',
      'tell me a joke',
      'play some music',
      'order a pizza',
    ];
    expect(withFallback([...real, 'Something else.'])).toHaveLength(1);
    expect(withFallback(real)).toEqual([]);
    expect(withFallback()).toEqual([]);
  });

  it('has nothing to say about a well-separated agent', () => {
    const clean = parseDefinition({ ...shop, capabilities: shop.capabilities.slice(0, 1) });
    expect(routingWarnings(clean)).toEqual([]);
  });

  it('lists at most twenty of a kind and counts the rest', () => {
    const many = parseDefinition({
      name: 'Many',
      capabilities: [
        { name: 'a', examples: Array.from({ length: 30 }, (_, i) => `same words ${i}`), phases: say('a') },
        { name: 'b', examples: Array.from({ length: 30 }, (_, i) => `same words ${i}`), phases: say('b') },
      ],
    });
    const dup = routingWarnings(many).filter((x) => x.code === 'duplicate_example');
    expect(dup).toHaveLength(21);
    expect(dup[20]).toMatchObject({ capability: '*', message: 'and 10 more like these' });
  });
});

describe('the routing report', () => {
  it('cross-validates over the examples: every example routed once by a model that never saw it', async () => {
    const def = parseDefinition(shop);
    const folds: number[] = [];
    const predictions = await crossValidate(def, 3, (done) => folds.push(done));
    expect(folds).toEqual([1, 2, 3]);
    // Two-example capabilities keep their first example in training; all others are held out once.
    expect(predictions).toHaveLength(6 + 6 + 1);
    expect(new Set(predictions.map((p) => p.message)).size).toBe(predictions.length - 1); // "where is my order" is in two
    const report = summarise('cv', def, predictions, routingWarnings(def));
    expect(report.total).toBe(13);
    expect(report.accuracy).toBe(predictions.filter((p) => p.expected === p.got).length / 13);
    const refund = report.capabilities.find((c) => c.name === 'refund')!;
    expect(refund.support).toBe(6);
    expect(refund.recall).toBe(predictions.filter((p) => p.expected === 'refund' && p.got === 'refund').length / 6);
  });

  it('scores labelled messages and ranks the confused pairs with their messages', async () => {
    const def = parseDefinition(shop);
    const labelled = [
      { message: 'where is my parcel', expected: 'order_status' },
      { message: 'I would like a refund please', expected: 'refund' },
      { message: 'what are your opening hours', expected: 'hours' },
      { message: 'my refund has not arrived', expected: 'order_status' },
      { message: 'refund status of my order', expected: 'order_status' },
    ];
    const predictions = await evaluateLabelled(def, labelled);
    const report = summarise('labelled', def, predictions, []);
    const wrong = predictions.filter((p) => p.expected !== p.got);
    expect(report.accuracy).toBe((5 - wrong.length) / 5);
    expect(report.confused.reduce((n, c) => n + c.count, 0)).toBe(wrong.length);
    for (const c of report.confused) expect(c.messages.length).toBeGreaterThan(0);
  });
});
