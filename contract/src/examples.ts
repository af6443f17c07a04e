// Examples of every operation's request body and success response, and of the problems callers
// meet most, for the OpenAPI document (server/src/http/openapi.ts puts them under
// components/examples and refers to them from each operation). They are the README's
// conversation with the example agent (agents/acme-support.yaml), as the server answers it;
// test/openapi-examples.test.ts checks each one against its schema.

const CONVERSATION = '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10';
const HANDED_OVER = 'de6c3a05-d82a-4a45-90e1-1c4a400d6dd5';
const AGENT = 'db3fe97f-e448-4b7b-9d8b-5a9233798cfc';
const ORDER_STATUS = '722050f4-8da3-5c52-9bf9-083a4c1c884b';
const HUMAN = 'ef4139d4-d1f1-5b05-937a-58e3f07bc454';
const REQUEST = '451438ac-91a0-4e0c-b453-5c1e6bb576e9';
const REPLAY = '9bb9a43a-f02f-492e-b3d2-51a0db89c937';
const KEY = 'af5f3a1d-e68a-4bcd-8f31-2357c91b5513';
const T0 = '2026-11-24T10:05:19.828Z';
const WIDGET_KEY_ID = '3c0a9e12-f0b4-4a57-9d0e-6b1c2d3e4f50';
const WIDGET_KEY = 'pk_3c0a9e12f0b44a579d0e6b1c2d3e4f50';
const T1 = '2026-11-24T10:05:42.033Z';
const REVIEW_ITEM = '0c6f1e0b-6a57-4d0e-9a0f-3f2b8e1d7c41';
const MISSED = '2b7e4f61-93d2-4c0a-8e55-1a9c6d0f3b72';
const EVALUATION = 'c5a1d7e3-2f48-4b96-a0c7-8e3d5f1b9a24';
const ASK = 'What is your order number? It has six digits (try 100001, 100002 or 999999).';
const SHIPPED = 'Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.';
const context = { version: 'v1', context: { identity: { user_id: 'u-42' } } };

const turns = [
  { role: 'user', message: 'where is my order?', timestamp: T0 },
  { role: 'agent', message: ASK, timestamp: T0, phase: 'ask_order', options: [] },
  { role: 'user', message: '100001', timestamp: T1 },
  { role: 'agent', message: SHIPPED, timestamp: T1, phase: 'shipped', options: [] },
];
const record = {
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
const { turns: _turns, ...summary } = record;

const definition = {
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

const agent = {
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

const release = (sequence: number, action: string, version: number, extra: Record<string, unknown> = {}) => ({
  id: `7d3e9c11-4b2a-4f6e-9a8d-0c1b2a3f4e${String(sequence).padStart(2, '0')}`,
  sequence,
  action,
  version,
  digest: '26c164594e2be54ac33f85a5ffda233ab5db17c2b5704f46166816608764c39f',
  previous_version: 1,
  split: null,
  gates,
  evaluation_id: EVALUATION,
  forced: false,
  reason: null,
  key_id: KEY,
  request_id: REQUEST,
  created_at: T1,
  hash: `${String(sequence).padStart(2, '0')}a1f3c5e7d9b2a4c6e8f0a2b4c6d8e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4`,
  ...extra,
});

const entry = (sequence: number, turnIndex: number, type: string, data: unknown, durationMs: number | null = null) => ({
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

const problem = (status: number, title: string, code: string, detail: string, errors?: { path: string; message: string }[]) => ({
  type: `https://switchboard.dev/problems/${code.replace(/_/g, '-')}`,
  title,
  status,
  detail,
  code,
  request_id: '5146d25a-1668-4995-97a6-f64cfa42e4b3',
  ...(errors ? { errors } : {}),
});

const replay = {
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

const reviewItem = {
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

const evaluation = {
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

const side = (labelled: number, accuracy: number) => ({
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

export interface OpenApiExample {
  summary: string;
  value: unknown;
}

/** Every example by its name in components/examples. */
export const EXAMPLES = {
  ConverseStart: { summary: 'Start a conversation', value: { message: 'where is my order?', context } },
  ConverseContinue: { summary: 'Continue one (with the conversation_id an answer gave)', value: { message: '100001', conversation_id: CONVERSATION } },
  ConverseAsked: {
    summary: 'The agent asks for what it needs',
    value: {
      conversation_id: CONVERSATION,
      response: { message: ASK, phase: 'ask_order', awaiting_input: true, options: [] },
      state: { status: 'active', capability: 'order_status' },
    },
  },
  ConverseDone: {
    summary: 'The agent called the orders API and answered',
    value: {
      conversation_id: CONVERSATION,
      response: { message: SHIPPED, phase: 'shipped', awaiting_input: false, options: [] },
      state: { status: 'completed', capability: 'order_status' },
    },
  },
  ConversationPage: {
    summary: 'One page of conversations',
    value: { data: [{ ...summary, capability: 'order_status', turn_count: 4, channel: null }], next_cursor: null },
  },
  Conversation: {
    summary: 'A conversation with its state',
    value: {
      ...record,
      capability: 'order_status',
      phase: 'shipped',
      awaiting_input: false,
      agent_version: 2,
      slots: { order_id: '100001', eta: '2026-11-24' },
      context,
      erased_at: null,
      channel: null,
    },
  },
  History: { summary: 'A conversation with its turns, oldest first', value: record },
  AuditPage: {
    summary: 'The routing decision, an action call and a status change of the conversation',
    value: {
      conversation_id: CONVERSATION,
      data: [
        entry(2, 0, 'status_change', { from: null, to: 'active', reason: 'created', outcome: null }),
        entry(3, 0, 'routing_decision', {
          strategy: 'classifier',
          selected: { capability: 'order_status', capability_id: ORDER_STATUS, score: 0.9942 },
          candidates: [
            { capability: 'order_status', score: 0.9942, eligible: true },
            { capability: 'human', score: 0.0001, eligible: true },
          ],
          threshold: 0.0007,
          similarity: 0.9999,
          min_similarity: 0.15,
          calibration: 'held_out',
          reason: 'best_match',
          model: 'tfidf-logreg-v3',
        }),
        entry(
          7,
          2,
          'action_call',
          {
            action: 'get_order',
            request: {
              method: 'GET',
              url: 'https://orders.example.com/orders/100001',
              headers: { 'user-agent': 'switchboard-actions/1', accept: 'application/json' },
            },
            response: { status: 200, body: { id: '100001', status: 'shipped', shipped_at: '2026-11-18', eta: '2026-11-24' } },
            outcome: 'ok',
            attempts: 1,
          },
          30.62,
        ),
        entry(9, 2, 'status_change', { from: 'active', to: 'completed', reason: 'flow_end', outcome: 'resolved' }),
      ],
      next_cursor: null,
    },
  },
  AuditVerified: {
    summary: 'Every entry chains to the one before it',
    value: { conversation_id: CONVERSATION, entries: 10, keyed_entries: 10, keyed_from: 1, valid: true, first_broken: null },
  },
  OperatorMessageRequest: { summary: 'A person answers', value: { message: 'Hi, this is Dana from support. Let me look into it.', author: 'dana' } },
  OperatorMessageResult: {
    summary: 'The turn it became',
    value: {
      conversation_id: HANDED_OVER,
      turn_index: 2,
      turn: { role: 'agent', message: 'Hi, this is Dana from support. Let me look into it.', timestamp: T1, phase: 'handoff', options: [], author: 'dana' },
    },
  },
  SetStatusRequest: { summary: 'Close a handed-over conversation', value: { status: 'completed', outcome: 'resolved_by_agent' } },
  Erased: { summary: "The user's conversations were erased", value: { erased: 3 } },
  WebhookDeliveryPage: {
    summary: 'A delivered event',
    value: {
      data: [
        {
          id: '3c0e2a7b-7b4d-4c3e-9d55-0a6f1f3f9b21',
          conversation_id: CONVERSATION,
          event: 'conversation.completed',
          url: 'https://hooks.example.com/switchboard',
          status: 'delivered',
          attempts: 1,
          next_attempt_at: null,
          created_at: T1,
          delivered_at: '2026-11-24T10:05:42.310Z',
          last_status: 200,
          last_error: null,
          history: [{ attempt: 1, at: '2026-11-24T10:05:42.310Z', status: 200, error: null, duration_ms: 41 }],
        },
      ],
      next_cursor: null,
    },
  },
  ChannelRequest: {
    summary: 'A Slack app’s bot token and signing secret',
    value: {
      credentials: { bot_token: 'xoxb-1234-5678-abcdefghijkl', signing_secret: '8f742231b10e8888abcd99yyyzzz85a5' },
      status: 'active',
      set_webhook: false,
    },
  },
  Channel: {
    summary: 'Connected: paste webhook_url into the Slack app’s Event Subscriptions and Interactivity',
    value: {
      channel: 'slack',
      status: 'active',
      webhook_url: 'https://switchboard.example.com/hooks/v1/ch_Q2hhbm5lbElkRXhhbXBsZV8wMDAwMDAw',
      credentials: ['bot_token', 'signing_secret'],
      webhook_set: null,
      created_at: T0,
      updated_at: T0,
    },
  },
  ChannelPaused: { summary: 'Pause a channel', value: { status: 'paused' } },
  ChannelList: {
    summary: 'One channel',
    value: {
      data: [
        {
          channel: 'telegram',
          status: 'active',
          webhook_url: 'https://switchboard.example.com/hooks/v1/ch_VGVsZWdyYW1DaGFubmVsRXhhbXBsZTAwMDA',
          credentials: ['bot_token', 'secret_token'],
          webhook_set: true,
          created_at: T0,
          updated_at: T0,
        },
      ],
    },
  },
  ChannelDeliveryPage: {
    summary: 'A reply sent after one 429',
    value: {
      data: [
        {
          id: '42',
          channel: 'slack',
          conversation_id: CONVERSATION,
          source: 'reply',
          status: 'sent',
          calls: 1,
          calls_done: 1,
          attempts: 2,
          next_attempt_at: null,
          created_at: T1,
          sent_at: '2026-11-24T10:05:45.020Z',
          latency_ms: 2987,
          provider_message_ids: ['1732442745.000200'],
          last_status: 200,
          last_error: null,
          history: [
            { attempt: 1, at: '2026-11-24T10:05:42.051Z', call: 'chat.postMessage', status: 429, error: 'rate limited', duration_ms: 38 },
            { attempt: 2, at: '2026-11-24T10:05:45.002Z', call: 'chat.postMessage', status: 200, error: null, duration_ms: 17 },
          ],
        },
      ],
      next_cursor: null,
    },
  },
  Definition: { summary: 'An agent that tracks orders and hands over to a person', value: definition },
  Agent: { summary: 'An agent and its current version', value: agent },
  AgentStored: {
    summary: 'Stored as version 2, now current, with nothing to warn about',
    value: { ...agent, stored_version: 2, release: release(2, 'activate', 2, { gates: [], evaluation_id: null }), warnings: [] },
  },
  Activated: { summary: 'Version 2 released through its gates', value: { ...agent, release: release(3, 'activate', 2) } },
  GatesFailed: {
    summary: 'A gate failed: the version was not released',
    value: {
      ...problem(409, 'Conflict', 'release_gates_failed', 'Version 3 fails 1 release gate: tests'),
      gates: [
        { gate: 'tests', passed: false, figure: 0.875, current: 1, limit: 1, evidence: 8, detail: 'tests: 7 of 8 pass (all must); failing: order lookup' },
      ],
      evaluation_id: EVALUATION,
    },
  },
  ReleasePage: {
    summary: 'The release record, newest first',
    value: {
      data: [release(4, 'split_start', 3, { previous_version: 2, split: { version: 3, percent: 50 } }), release(3, 'activate', 2)],
      next_cursor: null,
    },
  },
  ReleasesVerified: { summary: 'The release record is intact', value: { entries: 4, keyed_entries: 4, keyed_from: 1, valid: true, first_broken: null } },
  SplitRequest: { summary: 'Send half of new conversations to version 3', value: { version: 3, percent: 50 } },
  SplitStarted: {
    summary: 'Half of new conversations start on version 3',
    value: {
      split: { version: 3, percent: 50, started_at: T1 },
      release: release(4, 'split_start', 3, { previous_version: 2, split: { version: 3, percent: 50 } }),
    },
  },
  SplitEnded: {
    summary: 'Everyone on the current version again',
    value: { split: null, release: release(5, 'split_end', 3, { previous_version: 2, gates: [], evaluation_id: null, reason: 'Candidate escalates more' }) },
  },

  AgentList: { summary: "The tenant's agents", value: { data: [agent] } },
  VersionPage: {
    summary: 'Versions, newest first',
    value: {
      data: [
        { version: 2, created_at: '2026-11-24T09:00:00.000Z', current: true, capabilities: ['order_status', 'human'] },
        { version: 1, created_at: '2026-11-20T08:00:00.000Z', current: false, capabilities: ['order_status'] },
      ],
      next_cursor: null,
    },
  },
  Version: {
    summary: 'A version with its definition',
    value: {
      version: 2,
      created_at: '2026-11-24T09:00:00.000Z',
      current: true,
      capabilities: ['order_status', 'human'],
      digest: '26c164594e2be54ac33f85a5ffda233ab5db17c2b5704f46166816608764c39f',
      definition,
      warnings: [],
    },
  },
  Analytics: {
    summary: 'A week of conversations',
    value: {
      from: '2026-11-18T00:00:00.000Z',
      to: '2026-11-25T00:00:00.000Z',
      interval: 'day',
      conversations: { started: 120, completed: 96, escalated: 18, abandoned: 6, active: 0 },
      rates: { containment: 0.8, escalation: 0.15, abandonment: 0.05, fallback: 0.04 },
      turns_per_conversation_p50: 4,
      duration_seconds_p50: 38,
      capabilities: [
        { name: 'order_status', conversations: 92, completed: 84, escalated: 4, abandoned: 4 },
        { name: 'human', conversations: 28, completed: 12, escalated: 14, abandoned: 2 },
      ],
      outcomes: [
        { outcome: 'resolved', count: 84 },
        { outcome: 'escalated', count: 18 },
      ],
      series: [
        { start: '2026-11-23T00:00:00.000Z', started: 17, completed: 14, escalated: 2, abandoned: 1 },
        { start: '2026-11-24T00:00:00.000Z', started: 21, completed: 17, escalated: 3, abandoned: 1 },
      ],
      channels: [
        { channel: 'api', started: 80, completed: 66, escalated: 10, abandoned: 4 },
        { channel: 'web', started: 40, completed: 30, escalated: 8, abandoned: 2 },
      ],
      versions: [
        {
          version: 3,
          started: 60,
          completed: 50,
          escalated: 7,
          abandoned: 3,
          closed: 60,
          routed: 70,
          fallback: 2,
          rates: { containment: 0.8333, escalation: 0.1167, fallback: 0.0286, completion: 0.8333 },
          intervals: { containment: [0.7201, 0.9071], escalation: [0.0577, 0.2219], fallback: [0.0079, 0.0984], completion: [0.7201, 0.9071] },
          turns_per_conversation_p50: 4,
          duration_seconds_p50: 35,
        },
        {
          version: 2,
          started: 60,
          completed: 46,
          escalated: 11,
          abandoned: 3,
          closed: 60,
          routed: 72,
          fallback: 3,
          rates: { containment: 0.7667, escalation: 0.1833, fallback: 0.0417, completion: 0.7667 },
          intervals: { containment: [0.6456, 0.8556], escalation: [0.1055, 0.2996], fallback: [0.0143, 0.1156], completion: [0.6456, 0.8556] },
          turns_per_conversation_p50: 4,
          duration_seconds_p50: 41,
        },
      ],
    },
  },
  ReplayRequest: { summary: 'Replay the last completed conversations on version 1', value: { version: 1, status: 'completed', limit: 50 } },
  ReplayStarted: { summary: 'The replay runs in the background', value: { id: REPLAY, status: 'running' } },
  ReplayPage: { summary: 'Replays, newest first', value: { data: [replay], next_cursor: null } },
  Replay: {
    summary: 'A finished replay: one conversation answers differently',
    value: {
      ...replay,
      results: [
        { conversation_id: CONVERSATION, verdict: 'identical', first_difference: null },
        {
          conversation_id: HANDED_OVER,
          verdict: 'changed',
          first_difference: {
            turn_index: 1,
            message: 'I want to talk to a person',
            field: 'reply',
            recorded: "I'm handing you over to a colleague.",
            replayed: 'A colleague will take over here shortly.',
            changes: [{ field: 'reply', recorded: "I'm handing you over to a colleague.", replayed: 'A colleague will take over here shortly.' }],
          },
        },
      ],
    },
  },
  ReviewPage: {
    summary: 'One message that fell to the fallback, twice',
    value: {
      data: [reviewItem],
      counts: {
        fallback: { items: 1, messages: 2 },
        out_of_scope: { items: 0, messages: 0 },
        low_margin: { items: 0, messages: 0 },
        switched: { items: 0, messages: 0 },
        rephrased: { items: 0, messages: 0 },
        escalated: { items: 0, messages: 0 },
        slot_failed: { items: 0, messages: 0 },
      },
      capped: { per_conversation: 0, per_agent_hour: 0, since: '2026-11-20T09:00:00.000Z' },
      next_cursor: null,
    },
  },
  ReviewAddExample: {
    summary: 'Add a message to the examples of order_status',
    value: { items: [REVIEW_ITEM], action: 'add_example', capability: 'order_status' },
  },
  ReviewDismiss: { summary: 'Dismiss a message', value: { items: [REVIEW_ITEM], action: 'dismiss' } },
  ReviewActed: {
    summary: 'Added to a new draft',
    value: {
      acted: 1,
      draft: {
        version: 2,
        based_on: 1,
        added: [{ path: 'capabilities[1].examples', example: 'my parcel never turned up' }],
        unchanged: [],
        diff: '--- acme-support.yaml@1\n+++ acme-support.yaml@2\n@@ -46,4 +46,5 @@\n       - cuándo llega mi paquete\n       - mi pedido no ha llegado\n+      - my parcel never turned up\n',
      },
    },
  },
  ReviewItemClosed: {
    summary: 'Another reviewer acted first',
    value: problem(409, 'Conflict', 'review_item_closed', '1 of the items are no longer open: nothing was changed', [
      { path: 'items', message: `${REVIEW_ITEM} is not open` },
    ]),
  },
  TestSuite: {
    summary: "The agent's test conversations",
    value: {
      tests: [{ name: 'order status', steps: [{ user: 'where is my order?', expect: { capability: 'order_status', phase: 'ask_order' } }] }],
      updated_at: T1,
    },
  },
  PutTestSuite: {
    summary: 'Store one test conversation',
    value: { tests: [{ name: 'order status', steps: [{ user: 'where is my order?', expect: { capability: 'order_status', phase: 'ask_order' } }] }] },
  },
  EvaluationRequest: { summary: 'Evaluate with a replay of the 100 newest conversations', value: { replay: 100, folds: 5 } },
  EvaluationStarted: { summary: 'The evaluation runs in the background', value: { id: EVALUATION, status: 'running' } },
  EvaluationPage: { summary: 'Evaluations, newest first', value: { data: [evaluation], next_cursor: null } },
  Evaluation: {
    summary: 'The draft routes the three reviewed messages as reviewers said, and breaks nothing',
    value: {
      ...evaluation,
      result: {
        draft: side(3, 0.95),
        current: side(0, 0.925),
        labelled: {
          fixed: 3,
          broken: 0,
          messages: [
            { message: 'my parcel never turned up', expected: 'order_status', draft: 'order_status', current: 'fallback' },
            { message: 'where is the stuff I bought', expected: 'order_status', draft: 'order_status', current: 'fallback' },
            { message: "what's the weather like?", expected: 'fallback', draft: 'fallback', current: 'billing' },
          ],
        },
        replay: { replay_id: REPLAY, conversations: 100, identical: 97, changed: 3, errors: 0, capability: 3, outcome: 1, reply: 3, action: 0 },
      },
    },
  },
  TestsRequest: {
    summary: 'One test conversation',
    value: { tests: [{ name: 'order status', steps: [{ user: 'where is my order?', expect: { capability: 'order_status', phase: 'ask_order' } }] }] },
  },
  TestsResult: {
    summary: 'It passed',
    value: {
      version: 2,
      passed: 1,
      failed: 0,
      results: [
        {
          name: 'order status',
          passed: true,
          steps: [
            {
              user: 'where is my order?',
              passed: true,
              expected: { capability: 'order_status', phase: 'ask_order' },
              actual: { reply: ASK, capability: 'order_status', phase: 'ask_order', awaiting_input: true, status: 'active', outcome: null, slots: {} },
              failures: [],
            },
          ],
        },
      ],
    },
  },
  KeyRequest: { summary: 'A read-only key for dashboards', value: { name: 'dashboards', scopes: ['read'] } },
  CreatedKey: {
    summary: 'The key, shown this once',
    value: {
      id: KEY,
      name: 'dashboards',
      prefix: 'sbk_af5f3a1d',
      scopes: ['read'],
      widget: null,
      created_at: T0,
      revoked_at: null,
      key: 'sbk_af5f3a1de68a4bcd8f312357c91b5513_HfSPe4im0a48ikW_37D0K9QCLZCkbF54MwbZ6teaesA',
    },
  },
  KeyList: {
    summary: "The tenant's keys (never the key itself)",
    value: {
      data: [
        { id: KEY, name: 'dashboards', prefix: 'sbk_af5f3a1d', scopes: ['read'], widget: null, created_at: T0, revoked_at: null },
        {
          id: WIDGET_KEY_ID,
          name: 'shop widget',
          prefix: 'pk_3c0a9e12f',
          scopes: [],
          widget: { agents: ['acme-support'], origins: ['https://shop.example.com'], key: WIDGET_KEY },
          created_at: T0,
          revoked_at: null,
        },
      ],
    },
  },
  WidgetKeyRequest: {
    summary: 'A publishable key for the web chat widget on one site',
    value: { name: 'shop widget', widget: { agents: ['acme-support'], origins: ['https://shop.example.com'] } },
  },
  WidgetSettings: {
    summary: 'How the widget presents the agent',
    value: {
      agent: 'acme-support',
      title: 'Acme support',
      greeting: 'Hi! Ask me about an order, a refund, or talk to a person.',
      accent: '#1f6feb',
      languages: ['en', 'es'],
    },
  },
  VisitorTokenNew: { summary: 'A first visit: no token held yet', value: {} },
  VisitorTokenIssued: {
    summary: "A new visitor's token",
    value: {
      visitor_token: 'v1.Q2hhdFZpc2l0b3IwMDAwMQ.1764064800.3qfVn2bXh8a1rT0kYw5cJp7LmN4sZ6dE9gH2iK_oUxA',
      expires_at: '2026-11-25T10:00:00.000Z',
      renewed: false,
    },
  },
  WidgetConverseStart: {
    summary: "A visitor's first message",
    value: { message: 'where is my order?', language: 'en', page_url: 'https://shop.example.com/orders' },
  },
  WidgetConversation: {
    summary: "The visitor's conversation, as a reload shows it again",
    value: {
      conversation_id: CONVERSATION,
      status: 'active',
      awaiting_input: true,
      turns: [
        { index: 0, role: 'user', message: 'where is my order?', timestamp: T0 },
        { index: 1, role: 'agent', message: ASK, timestamp: T0, options: [] },
      ],
    },
  },
  WidgetOriginRefused: {
    summary: 'A page of an origin the key does not allow',
    value: problem(403, 'Forbidden', 'forbidden', "This key does not allow pages of https://elsewhere.example: add the origin to the key's allowed origins"),
  },
  SecretRequest: { summary: 'A token for the orders API', value: { value: 'orders-api-token-5f2a9c' } },
  SecretList: { summary: 'Names and dates only', value: { data: [{ name: 'ORDERS_TOKEN', created_at: T0, updated_at: T0 }] } },
  Healthy: { summary: 'Up', value: { status: 'ok' } },
  ConversationEvents: {
    summary: 'Two turns and a phase change, then a keep-alive comment',
    value:
      'id: 412-0\nevent: turn.created\ndata: {"index":2,"role":"user","message":"100001","timestamp":"2026-11-24T10:05:42.033Z"}\n\n' +
      'id: 412-1\nevent: turn.created\ndata: {"index":3,"role":"agent","message":"Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.","timestamp":"2026-11-24T10:05:42.033Z","phase":"shipped","options":[]}\n\n' +
      'id: 412-2\nevent: phase.changed\ndata: {"capability":"order_status","from":"lookup","to":"shipped"}\n\n: ping\n\n',
  },
  Metrics: {
    summary: 'Prometheus text',
    value:
      '# HELP switchboard_turns_total User messages answered\n# TYPE switchboard_turns_total counter\nswitchboard_turns_total{tenant="demo",agent="acme-support",capability="order_status",status="completed"} 96\n',
  },
  ValidationError: {
    summary: 'A body the contract refuses',
    value: problem(400, 'Bad Request', 'validation_error', 'The request is not valid', [{ path: 'message', message: 'Required' }]),
  },
  TenantRequired: {
    summary: 'No tenant-id header',
    value: problem(400, 'Bad Request', 'tenant_required', 'The tenant-id header is required', [{ path: 'header.tenant-id', message: 'required' }]),
  },
  Unauthorized: { summary: 'No key, or a wrong one (AUTH_MODE=api_key)', value: problem(401, 'Unauthorized', 'unauthorized', 'A valid API key is required') },
  AgentNotFound: { summary: 'No such agent for this tenant', value: problem(404, 'Not Found', 'agent_not_found', 'No agent "acme-suport"') },
  LimitExceeded: {
    summary: 'The conversation reached its turn limit',
    value: problem(422, 'Unprocessable Content', 'limit_exceeded', 'The conversation has reached its limit of 200 turns', [
      { path: 'conversation_id', message: 'The conversation has reached its limit of 200 turns' },
    ]),
  },
  TrainingBudgetExceeded: {
    summary: 'The router would need more than the training budget',
    value: problem(
      422,
      'Unprocessable Content',
      'training_budget_exceeded',
      'training this router took longer than 30000 ms; use fewer examples or capabilities',
      [{ path: 'capabilities', message: 'training this router took longer than 30000 ms; use fewer examples or capabilities' }],
    ),
  },
  ConversationClosed: { summary: 'The conversation has ended', value: problem(409, 'Conflict', 'conversation_closed', 'The conversation is completed') },
} satisfies Record<string, OpenApiExample>;

export type ExampleName = keyof typeof EXAMPLES;

/** Per operation: its request body's examples, its success response's, and its usual problems' by status. */
export const OPERATION_EXAMPLES: Record<string, { request?: ExampleName[]; response: ExampleName[]; problems?: Record<number, ExampleName[]> }> = {
  converse: {
    request: ['ConverseStart', 'ConverseContinue'],
    response: ['ConverseAsked', 'ConverseDone'],
    problems: {
      400: ['ValidationError', 'TenantRequired'],
      401: ['Unauthorized'],
      404: ['AgentNotFound'],
      409: ['ConversationClosed'],
      422: ['LimitExceeded'],
    },
  },
  listConversations: { response: ['ConversationPage'], problems: { 404: ['AgentNotFound'] } },
  getConversation: { response: ['Conversation'] },
  eraseConversation: { response: [] },
  getHistory: { response: ['History'] },
  getAuditLogs: { response: ['AuditPage'] },
  verifyAuditLogs: { response: ['AuditVerified'] },
  streamEvents: { response: ['ConversationEvents'] },
  postOperatorMessage: { request: ['OperatorMessageRequest'], response: ['OperatorMessageResult'] },
  setStatus: { request: ['SetStatusRequest'], response: ['Conversation'] },
  eraseUserConversations: { response: ['Erased'] },
  listWebhookDeliveries: { response: ['WebhookDeliveryPage'] },
  listChannels: { response: ['ChannelList'] },
  putChannel: { request: ['ChannelRequest'], response: ['Channel'] },
  patchChannel: { request: ['ChannelPaused'], response: ['Channel'] },
  deleteChannel: { response: [] },
  listChannelDeliveries: { response: ['ChannelDeliveryPage'] },
  putAgent: { request: ['Definition'], response: ['AgentStored'], problems: { 400: ['ValidationError'], 422: ['TrainingBudgetExceeded'] } },
  getAgent: { response: ['Agent'], problems: { 404: ['AgentNotFound'] } },
  deleteAgent: { response: [] },
  listVersions: { response: ['VersionPage'] },
  getVersion: { response: ['Version'] },
  getAnalytics: { response: ['Analytics'] },
  startReplay: { request: ['ReplayRequest'], response: ['ReplayStarted'] },
  listReplays: { response: ['ReplayPage'] },
  getReplay: { response: ['Replay'] },
  runTests: { request: ['TestsRequest'], response: ['TestsResult'] },
  listReview: { response: ['ReviewPage'] },
  actOnReview: { request: ['ReviewAddExample', 'ReviewDismiss'], response: ['ReviewActed'], problems: { 409: ['ReviewItemClosed'] } },
  getTestSuite: { response: ['TestSuite'] },
  putTestSuite: { request: ['PutTestSuite'], response: ['TestSuite'] },
  startEvaluation: { request: ['EvaluationRequest'], response: ['EvaluationStarted'] },
  listEvaluations: { response: ['EvaluationPage'] },
  getEvaluation: { response: ['Evaluation'] },
  activateVersion: { response: ['Activated'], problems: { 409: ['GatesFailed'] } },
  listReleases: { response: ['ReleasePage'] },
  verifyReleases: { response: ['ReleasesVerified'] },
  putSplit: { request: ['SplitRequest'], response: ['SplitStarted'], problems: { 409: ['GatesFailed'] } },
  endSplit: { response: ['SplitEnded'] },
  promoteSplit: { response: ['Activated'] },
  listAgents: { response: ['AgentList'] },
  createKey: { request: ['KeyRequest', 'WidgetKeyRequest'], response: ['CreatedKey'] },
  getWidget: { response: ['WidgetSettings'], problems: { 403: ['WidgetOriginRefused'] } },
  widgetVisitor: { request: ['VisitorTokenNew'], response: ['VisitorTokenIssued'], problems: { 403: ['WidgetOriginRefused'] } },
  widgetConverse: {
    request: ['WidgetConverseStart'],
    response: ['ConverseAsked', 'ConverseDone'],
    problems: { 403: ['WidgetOriginRefused'], 409: ['ConversationClosed'] },
  },
  getWidgetConversation: { response: ['WidgetConversation'] },
  widgetEvents: { response: ['ConversationEvents'] },
  listKeys: { response: ['KeyList'] },
  revokeKey: { response: [] },
  putSecret: { request: ['SecretRequest'], response: [] },
  deleteSecret: { response: [] },
  listSecrets: { response: ['SecretList'] },
  healthz: { response: ['Healthy'] },
  readyz: { response: ['Healthy'] },
  metrics: { response: ['Metrics'] },
};

/**
 * An example of each parameter, by `in:name`, or `operationId in:name` where one name means
 * another thing: values that work against `npm start`, which holds the README's conversation
 * under its id here (scripts/demo.ts). Optional parameters whose only valid values the server
 * hands out (a cursor, last-event-id, a user hash) have none, so that converters leave them out
 * rather than send a made-up one.
 */
export const PARAMETER_EXAMPLES: Partial<Record<string, string | number>> = {
  'path:slug': 'acme-support',
  'path:id': CONVERSATION,
  'getReplay path:id': REPLAY,
  'getEvaluation path:id': EVALUATION,
  'query:reason': 'fallback',
  'listReview query:status': 'open',
  'query:since': '2026-11-01T00:00:00Z',
  'query:until': '2026-12-01T00:00:00Z',
  'revokeKey path:id': KEY,
  'path:version': 1,
  'path:name': 'ORDERS_TOKEN',
  'path:user_id': 'u-42',
  'header:user-id': 'u-42',
  'header:idempotency-key': 'order-100001-check',
  'header:x-request-id': 'readme-conversation-1',
  'header:x-visitor-token': 'v1.Q2hhdFZpc2l0b3IwMDAwMQ.1764064800.3qfVn2bXh8a1rT0kYw5cJp7LmN4sZ6dE9gH2iK_oUxA',
  'query:key': WIDGET_KEY,
  'query:user_id': 'u-42',
  'query:conversation_id': CONVERSATION,
  'query:capability': 'order_status',
  'query:created_after': '2026-11-01T00:00:00Z',
  'query:created_before': '2026-12-01T00:00:00Z',
  'query:from': '2026-11-01T00:00:00Z',
  'query:to': '2026-12-01T00:00:00Z',
  'query:language': 'en',
  'query:status': 'completed',
  'listWebhookDeliveries query:status': 'failed',
  'query:channel': 'api',
  'listChannelDeliveries query:channel': 'slack',
  'listChannelDeliveries query:status': 'failed',
  'path:channel': 'slack',
  'query:type': 'routing_decision',
  'query:activate': 'true',
  'query:force': 'false',
  'activateVersion query:reason': 'Tests updated with the new order lookup',
  'promoteSplit query:reason': 'Candidate contained more conversations',
  'endSplit query:reason': 'Candidate escalates more',
  'query:interval': 'day',
};
