// Slots from the opening message, number words, and min/max on numbers.
import * as chrono from 'chrono-node';
import { describe, expect, it, vi } from 'vitest';
import { RenderBudget } from '../../server/src/engine/templates.js';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { compileAgent, validateDefinition } from '../../server/src/engine/compile.js';
import type { TurnResult } from '../../server/src/engine/run.js';
import { parseDefinition } from '../helpers/agents.js';
import { driveTurn, priorOf } from '../helpers/engine.js';

async function agentOf(def: AgentDefinitionInput) {
  const parsed = parseDefinition(def);
  expect(validateDefinition(parsed)).toEqual([]);
  return compileAgent('00000000-0000-4000-8000-000000000003', 1, parsed);
}
type Agent = Awaited<ReturnType<typeof agentOf>>;

const after = priorOf;

function pizza(over: { countPrefill?: boolean } = {}): AgentDefinitionInput {
  return {
    name: 'Pizza',
    capabilities: [
      {
        name: 'order_pizza',
        examples: ['I want to order a pizza', 'can I get a pizza', 'pizza please', 'I would like to order pizza'],
        phases: [
          {
            id: 'ask_pizza',
            say: 'Which pizza?',
            options: [
              { label: 'Margherita', value: 'margherita' },
              { label: 'Pepperoni', value: 'pepperoni' },
            ],
            collect: { slot: 'pizza', type: 'choice' },
          },
          { id: 'ask_size', say: 'What size?', collect: { slot: 'size', type: 'choice', choices: ['small', 'medium', 'large'] } },
          {
            id: 'ask_count',
            say: 'How many?',
            collect: { slot: 'count', type: 'integer', min: 1, max: 20, ...(over.countPrefill === false ? { prefill: false } : {}) },
          },
          { id: 'ask_note', say: 'Any note for the kitchen?', collect: { slot: 'note', type: 'text' } },
          { id: 'done', say: '{{ slots.count }} {{ slots.size }} {{ slots.pizza }}, noted: {{ slots.note }}.', end: 'completed' },
        ],
      },
      { name: 'hours', examples: ['when are you open', 'opening hours', 'what time do you close'], phases: [{ id: 'h', say: 'Noon to midnight.' }] },
    ],
  };
}

const filled = (r: TurnResult) => r.audit.filter((a) => a.type === 'slot_filled').map((a) => a.data);

describe('slots from the opening message', () => {
  it('fills every slot the message names and skips the phases that would ask for them', async () => {
    const agent = await agentOf(pizza());
    const { result } = driveTurn(agent, 'can I get two large margheritas please');
    expect(result.capability.name).toBe('order_pizza');
    expect(result.flow.slots).toEqual({ pizza: 'margherita', size: 'large', count: 2 });
    // A text slot without a pattern is never filled from the opening message: it is asked for.
    expect(result.phase).toBe('ask_note');
    expect(result.reply).toBe('Any note for the kitchen?');
    expect(filled(result)).toEqual([
      { slot: 'pizza', phase: 'ask_pizza', source: 'margheritas', capability: 'order_pizza' },
      { slot: 'size', phase: 'ask_size', source: 'large', capability: 'order_pizza' },
      { slot: 'count', phase: 'ask_count', source: 'two', capability: 'order_pizza' },
    ]);
    const next = driveTurn(agent, 'extra basil', { prior: after(result), turnIndex: 2 }).result;
    expect(next.reply).toBe('2 large margherita, noted: extra basil.');
  });

  it('leaves a slot alone when the message holds two values for it, and asks', async () => {
    const { result } = driveTurn(await agentOf(pizza()), 'can I get a large or a small pepperoni pizza');
    expect(result.flow.slots).toEqual({ pizza: 'pepperoni' });
    expect(result.phase).toBe('ask_size');
    expect(result.reply).toBe('What size?');
  });

  it('reads digits and number words within min and max, and not past them', async () => {
    const agent = await agentOf(pizza());
    expect(driveTurn(agent, 'I want to order 3 small pepperoni pizzas').result.flow.slots).toEqual({ pizza: 'pepperoni', size: 'small', count: 3 });
    expect(driveTurn(agent, 'I want to order half a dozen small pepperoni pizzas').result.flow.slots.count).toBe(6);
    // 40 is over the collect's max of 20: not a value for it.
    const over = driveTurn(agent, 'I want to order 40 small pepperoni pizzas').result;
    expect(over.flow.slots).toEqual({ pizza: 'pepperoni', size: 'small' });
    expect(over.reply).toBe('How many?');
  });

  it('does nothing for a collect with prefill: false', async () => {
    const { result } = driveTurn(await agentOf(pizza({ countPrefill: false })), 'can I get two large margheritas');
    expect(result.flow.slots).toEqual({ pizza: 'margherita', size: 'large' });
    expect(result.reply).toBe('How many?');
  });

  it('gives words two slots could both read to neither', async () => {
    const agent = await agentOf({
      name: 'Orders',
      capabilities: [
        {
          name: 'order_status',
          examples: ['where is my order', 'track my order', 'order status'],
          phases: [
            { id: 'ask_order', say: 'Order number?', collect: { slot: 'order_id', type: 'text', pattern: '^[0-9]{6}$' } },
            { id: 'ask_items', say: 'How many items?', collect: { slot: 'items', type: 'integer' } },
            { id: 'done', say: '{{ slots.order_id }}: {{ slots.items }}', end: 'completed' },
          ],
        },
        { name: 'hours', examples: ['when are you open', 'opening hours'], phases: [{ id: 'h', say: 'Noon.' }] },
      ],
    });
    const both = driveTurn(agent, 'where is my order 100001').result;
    expect(both.flow.slots).toEqual({});
    expect(both.reply).toBe('Order number?');
    // Two numbers: the six-digit one is the order's alone, but 3 is still one of two integers.
    expect(driveTurn(agent, 'where is my order 100001 with 3 items').result.flow.slots).toEqual({});
  });

  it('fills an emailed address and a date, and asks again in a loop once the filled phase is passed', async () => {
    const agent = await agentOf({
      name: 'Bookings',
      capabilities: [
        {
          name: 'book',
          examples: ['book a table', 'I want a reservation', 'reserve a table'],
          phases: [
            { id: 'ask_email', say: 'Your email?', collect: { slot: 'email', type: 'email' } },
            { id: 'ask_day', say: 'Which day?', collect: { slot: 'day', type: 'date' } },
            { id: 'ok', say: 'Booked {{ slots.day }} for {{ slots.email }}.', next: 'ask_day' },
          ],
        },
        { name: 'hours', examples: ['when are you open', 'opening hours'], phases: [{ id: 'h', say: 'Noon.' }] },
      ],
    });
    const first = driveTurn(agent, 'book a table tomorrow for ana@example.com').result;
    expect(first.flow.slots).toEqual({ email: 'ana@example.com', day: '2026-11-23' });
    // The loop comes back to ask_day: filled once, asked for from then on.
    expect(first.reply).toBe('Booked 2026-11-23 for ana@example.com.\nWhich day?');
    expect(first.awaitingInput).toBe(true);
    expect(first.phase).toBe('ask_day');
  });
});

describe('numbers in answers', () => {
  it('takes number words and refuses values outside min and max', async () => {
    const agent: Agent = await agentOf(pizza());
    let r = driveTurn(agent, 'I want to order a pizza').result;
    r = driveTurn(agent, 'pepperoni', { prior: after(r), turnIndex: 2 }).result;
    r = driveTurn(agent, 'medium', { prior: after(r), turnIndex: 4 }).result;
    expect(r.reply).toBe('How many?');
    const tooMany = driveTurn(agent, '21', { prior: after(r), turnIndex: 6 }).result;
    expect(tooMany.phase).toBe('ask_count');
    expect(tooMany.flow.slots.count).toBeUndefined();
    expect(driveTurn(agent, 'a dozen', { prior: after(r), turnIndex: 6 }).result.flow.slots.count).toBe(12);
    expect(driveTurn(agent, 'twenty', { prior: after(r), turnIndex: 6 }).result.flow.slots.count).toBe(20);
  });
});

describe('prefilling many slots', () => {
  const dates = (n: number, type: 'date' | 'text' = 'date'): AgentDefinitionInput => ({
    name: 'Dates',
    capabilities: [
      {
        name: 'book',
        examples: ['book a table', 'reserve a table', 'a table please', 'I want to book'],
        phases: [
          ...Array.from({ length: n }, (_, i) => ({
            id: `ask_${i}`,
            say: `Slot ${i}?`,
            collect:
              type === 'date'
                ? { slot: `day_${i}`, type: 'date' as const }
                : { slot: `code_${i}`, type: 'text' as const, pattern: `^[a-z]{${(i % 5) + 1}}[0-9]+$` },
          })),
          { id: 'done', say: 'Booked.', end: 'completed' as const },
        ],
      },
    ],
  });

  it('reads the dates of an opening message once, however many date slots the capability has', async () => {
    const agent = await agentOf(dates(499));
    const parse = vi.spyOn(chrono.casual, 'parse');
    try {
      const { result } = driveTurn(agent, 'book a table for tomorrow');
      expect(result.capability.name).toBe('book');
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('stops at the turn’s render budget, audited, and asks as usual', async () => {
    const agent = await agentOf(dates(400, 'text'));
    const { result } = driveTurn(agent, 'book a table ab123 abc456 abcd789', { budget: new RenderBudget({ timeMs: 0.001, outputChars: 100_000 }) });
    expect(result.audit.filter((a) => a.type === 'slot_filled')).toEqual([]);
    expect(result.audit.find((a) => a.type === 'error')?.data).toMatchObject({ code: 'render_budget_exceeded', capability: 'book' });
    expect(result.reply).toBe('Slot 0?');
  });
});
