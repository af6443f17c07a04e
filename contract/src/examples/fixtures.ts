// What the examples of every resource (contract/src/resources/) are made of: the README's
// conversation with the example agent (agents/acme-support.yaml) as the server answers it, and
// the ids `npm start` keeps for it (scripts/demo.ts). test/openapi-examples.test.ts checks each
// example against its schema.

export const CONVERSATION = '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10';
export const HANDED_OVER = 'de6c3a05-d82a-4a45-90e1-1c4a400d6dd5';
const AGENT = 'db3fe97f-e448-4b7b-9d8b-5a9233798cfc';
export const ORDER_STATUS = '722050f4-8da3-5c52-9bf9-083a4c1c884b';
const HUMAN = 'ef4139d4-d1f1-5b05-937a-58e3f07bc454';
const REQUEST = '451438ac-91a0-4e0c-b453-5c1e6bb576e9';
export const REPLAY = '9bb9a43a-f02f-492e-b3d2-51a0db89c937';
export const KEY = 'af5f3a1d-e68a-4bcd-8f31-2357c91b5513';
export const T0 = '2026-11-24T10:05:19.828Z';
export const WIDGET_KEY_ID = '3c0a9e12-f0b4-4a57-9d0e-6b1c2d3e4f50';
export const WIDGET_KEY = 'pk_3c0a9e12f0b44a579d0e6b1c2d3e4f50';
export const T1 = '2026-11-24T10:05:42.033Z';
export const REVIEW_ITEM = '0c6f1e0b-6a57-4d0e-9a0f-3f2b8e1d7c41';
const MISSED = '2b7e4f61-93d2-4c0a-8e55-1a9c6d0f3b72';
export const EVALUATION = 'c5a1d7e3-2f48-4b96-a0c7-8e3d5f1b9a24';
export const ASK = 'What is your order number? It has six digits (try 100001, 100002 or 999999).';
export const SHIPPED = 'Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.';
export const context = { version: 'v1', context: { identity: { user_id: 'u-42' } } };

const turns = [
  { role: 'user', message: 'where is my order?', timestamp: T0 },
  { role: 'agent', message: ASK, timestamp: T0, phase: 'ask_order', options: [] },
  { role: 'user', message: '100001', timestamp: T1 },
  { role: 'agent', message: SHIPPED, timestamp: T1, phase: 'shipped', options: [] },
];
export const record = {
  id: CONVERSATION,
  agent_id: AGENT,
  capability_id: ORDER_STATUS,
  user_id: 'u-42',
  status: 'completed',
  outcome: 'resolved',
  turns,
  created_at: T0,
  updated_at: T1,
  completed_at: T1,
};
const { turns: _turns, ...recordSummary } = record;
export const summary = recordSummary;

export const definition = {
  name: 'Acme Support',
  description: "Orders and billing help for Acme's shop",
  default_language: 'en',
  capabilities: [
    {
      name: 'order_status',
      description: 'Where is my order, track a package or delivery',
      examples: ['where is my order', 'track my package', 'has my order shipped', 'my delivery is late'],
      phases: [
        { id: 'ask_order', say: ASK, collect: { slot: 'order_id', type: 'text', pattern: '^[0-9]{6}$' }, next: 'lookup' },
        { id: 'lookup', call: 'get_order', on_error: 'sorry', next: 'shipped' },
        {
          id: 'shipped',
          say: 'Order {{ slots.order_id }} shipped on {{ actions.get_order.body.shipped_at }} and should arrive by {{ slots.eta }}.',
          end: 'completed',
        },
        { id: 'sorry', say: "I couldn't reach our order system just now.", end: 'escalated' },
      ],
    },
    {
      name: 'human',
      description: 'Talk to a human agent',
      examples: ['talk to a human', 'real person please', 'I want to speak to someone'],
      phases: [{ id: 'handoff', say: "I'm handing you over to a colleague.", end: 'escalated' }],
    },
  ],
  actions: {
    get_order: {
      type: 'http',
      method: 'GET',
      url: 'https://orders.example.com/orders/{{ slots.order_id }}',
      headers: { accept: 'application/json' },
      timeout_ms: 3000,
      save: { eta: 'body.eta' },
    },
  },
};

export const agent = {
  id: AGENT,
  slug: 'acme-support',
  name: 'Acme Support',
  description: "Orders and billing help for Acme's shop",
  version: 2,
  capabilities: [
    { id: ORDER_STATUS, name: 'order_status', description: 'Where is my order, track a package or delivery' },
    { id: HUMAN, name: 'human', description: 'Talk to a human agent' },
  ],
  definition,
  split: null,
  created_at: '2026-11-20T08:00:00.000Z',
  updated_at: '2026-11-24T09:00:00.000Z',
};

const gates = [
  { gate: 'tests', passed: true, figure: 1, current: 1, limit: 1, evidence: 8, detail: 'tests: 8 of 8 pass (all must)' },
  {
    gate: 'labelled_accuracy',
    passed: true,
    figure: 0.9667,
    current: 0.8,
    limit: 0.9,
    evidence: 30,
    detail: 'labelled accuracy: 96.67% of 30 reviewed messages (at least 90%, not below the current 80%)',
  },
  {
    gate: 'replay_changed_outcomes',
    passed: true,
    figure: 0.01,
    current: null,
    limit: 0.02,
    evidence: 100,
    detail: 'replay: 1 of 100 conversations changed status or outcome, 1% (at most 2%)',
  },
  { gate: 'new_hosts', passed: true, figure: 0, current: null, limit: 0, evidence: 1, detail: 'new hosts: none (forbidden)' },
];

export const release = (sequence: number, action: string, version: number, extra: Record<string, unknown> = {}) => ({
  id: `7d3e9c11-4b2a-4f6e-9a8d-0c1b2a3f4e${String(sequence).padStart(2, '0')}`,
  sequence,
  action,
  version,
  digest: '26c164594e2be54ac33f85a5ffda233ab5db17c2b5704f46166816608764c39f',
  knowledge: null,
  previous_version: 1,
  split: null,
  gates,
  evaluation_id: EVALUATION,
  forced: false,
  reason: null,
  key_id: KEY,
  actor: { kind: 'key', id: KEY },
  request_id: REQUEST,
  created_at: T1,
  hash: `${String(sequence).padStart(2, '0')}a1f3c5e7d9b2a4c6e8f0a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4`,
  ...extra,
});

export const entry = (sequence: number, turnIndex: number, type: string, data: unknown, durationMs: number | null = null) => ({
  id: `0b7a8a43-32a5-4d8e-8f5e-2f5a1c0f8e${String(sequence).padStart(2, '0')}`,
  conversation_id: CONVERSATION,
  sequence,
  turn_index: turnIndex,
  type,
  request_id: REQUEST,
  timestamp: turnIndex === 0 ? T0 : T1,
  duration_ms: durationMs,
  data,
  hash: `${String(sequence).padStart(2, '0')}5252ae2c7aa5e83274299a3322947ab5fdd213023799f02ae9239355010e32`,
});

export const problem = (status: number, title: string, code: string, detail: string, errors?: { path: string; message: string }[]) => ({
  type: `https://switchboard.dev/problems/${code.replace(/_/g, '-')}`,
  title,
  status,
  detail,
  code,
  request_id: '5146d25a-1668-4995-97a6-f64cfa42e4b3',
  ...(errors ? { errors } : {}),
});

export const replay = {
  id: REPLAY,
  version: 2,
  status: 'done',
  progress: { done: 2, total: 2 },
  summary: { conversations: 2, identical: 1, changed: 1, errors: 0 },
  error: null,
  created_at: T1,
  updated_at: '2026-11-24T10:05:44.902Z',
  expires_at: '2026-12-01T10:05:42.033Z',
};

export const reviewItem = {
  id: REVIEW_ITEM,
  reason: 'fallback',
  status: 'open',
  message: 'my parcel never turned up',
  count: 2,
  capability: 'fallback',
  first_seen_at: T0,
  last_seen_at: T1,
  occurrences: [
    {
      conversation_id: MISSED,
      turn_index: 0,
      audit_sequence: 2,
      version: 1,
      capability: 'fallback',
      message: 'my parcel never turned up',
      detail: { routing_reason: 'below_threshold', best: { capability: 'order_status', score: 0.41 } },
      at: T1,
    },
  ],
  action: null,
};

export const evaluation = {
  id: EVALUATION,
  version: 3,
  baseline: 1,
  status: 'done',
  stage: 'done',
  progress: { done: 15, total: 15 },
  error: null,
  created_by: KEY,
  created_at: T1,
  updated_at: '2026-11-24T10:06:31.512Z',
  expires_at: '2026-12-24T10:05:42.033Z',
};

export const side = (labelled: number, accuracy: number) => ({
  cross_validation: {
    total: 40,
    accuracy,
    capabilities: [{ name: 'order_status', support: 14, precision: 1, recall: 0.93 }],
    confused: [{ expected: 'order_status', got: 'billing', count: 1, messages: ['my delivery is late'] }],
    matrix: {
      labels: ['billing', 'order_status'],
      counts: [
        [26, 0],
        [1, 13],
      ],
    },
  },
  labelled: { total: 3, as_reviewed: labelled },
  tests: { total: 11, passed: 11, failed: [] },
});
