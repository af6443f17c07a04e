// Small agent definitions for tests, declared inline.
import { AgentDefinition, type AgentDefinitionInput } from '@switchboard/contract';

export const parseDefinition = (d: AgentDefinitionInput) => AgentDefinition.parse(d);

/** An agent that echoes every message back, forever: turns pair up visibly. */
export const echoAgent: AgentDefinitionInput = {
  name: 'Echo',
  capabilities: [
    {
      name: 'echo',
      examples: ['echo this', 'repeat after me'],
      phases: [
        { id: 'listen', say: 'Say something.', collect: { slot: 'said', type: 'text' } },
        { id: 'repeat', say: 'You said: {{ slots.said }}', next: 'listen2' },
        { id: 'listen2', collect: { slot: 'said', type: 'text' }, next: 'repeat' },
      ],
    },
  ],
};

/** Orders, billing options, gated capability and a human hand-off. */
export function supportAgent(actionUrl: string, extra: Partial<AgentDefinitionInput> = {}): AgentDefinitionInput {
  return {
    name: 'Support',
    routing: { threshold: 0.3 },
    messages: { fallback: { en: 'No idea, sorry.', es: 'Ni idea, lo siento.' } },
    capabilities: [
      {
        name: 'order_status',
        description: 'Track an order',
        examples: ['where is my order', 'track my package', 'has my order shipped'],
        phases: [
          {
            id: 'ask_order',
            say: { en: 'What is your order number?', es: '¿Cuál es su número de pedido?' },
            options: [{ label: "I don't know it", value: 'unknown' }],
            collect: { slot: 'order_id', type: 'text', pattern: '^[0-9]{6}$', retry: 'Six digits, please.', max_attempts: 3 },
            next: 'lookup',
          },
          {
            id: 'lookup',
            call: 'get_order',
            on_error: 'sorry',
            next: [{ if: "actions.get_order.body.status == 'shipped'", goto: 'shipped' }, { goto: 'not_shipped' }],
          },
          { id: 'shipped', say: 'Order {{ slots.order_id }} shipped on {{ actions.get_order.body.shipped_at }}, eta {{ slots.eta }}.', end: 'completed' },
          { id: 'not_shipped', say: 'Order {{ slots.order_id }} is being prepared.', end: 'completed', outcome: 'pending' },
          { id: 'sorry', say: 'Our order system is not answering.', end: 'escalated' },
        ],
      },
      {
        name: 'vip',
        examples: ['priority phone line', 'call me back now'],
        requires: { tier: ['gold'] },
        phases: [{ id: 'callback', say: 'A priority agent will call you.', end: 'completed' }],
      },
      {
        name: 'human',
        examples: ['talk to a human', 'real person please'],
        phases: [{ id: 'handoff', say: 'Handing you over.', end: 'escalated' }],
      },
    ],
    actions: {
      get_order: {
        type: 'http',
        method: 'GET',
        url: `${actionUrl}/orders/{{ slots.order_id }}`,
        headers: { authorization: 'Bearer {{ secrets.ORDERS_TOKEN }}' },
        retries: 1,
        timeout_ms: 2000,
        save: { eta: 'body.eta' },
      },
    },
    ...extra,
  };
}

/** The echo agent with a slow HTTP action in every turn, so that concurrent turns overlap in time. */
export function slowEchoAgent(backendUrl: string): AgentDefinitionInput {
  return {
    name: 'Slow echo',
    capabilities: [
      {
        name: 'echo',
        examples: ['echo this'],
        phases: [
          { id: 'listen', say: 'Say something.', collect: { slot: 'said', type: 'text' } },
          { id: 'work', call: 'tick' },
          { id: 'repeat', say: 'You said: {{ slots.said }}' },
          { id: 'listen2', collect: { slot: 'said', type: 'text' }, next: 'work' },
        ],
      },
    ],
    actions: { tick: { type: 'http', method: 'GET', url: `${backendUrl}/tick?said={{ slots.said | url_encode }}` } },
  };
}

/** Asks for an order number and looks it up with one HTTP action at `base`; `more` capabilities beside it. */
export function orderLookupAgent(base: string, more: AgentDefinitionInput['capabilities'] = []): AgentDefinitionInput {
  return {
    name: 'Shop',
    capabilities: [
      {
        name: 'order_status',
        examples: ['where is my order', 'track my package', 'has my order shipped', 'order status please'],
        phases: [
          { id: 'ask', say: 'Your order number?', collect: { slot: 'order_id', type: 'text' } },
          { id: 'look', call: 'get_order', say: 'It is {{ actions.get_order.body.status }}.', end: 'completed', outcome: 'order_found' },
        ],
      },
      ...more,
    ],
    actions: { get_order: { type: 'http', method: 'GET', url: `${base}/orders/{{ slots.order_id }}` } },
  };
}
