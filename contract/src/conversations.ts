// Conversation records, summaries, history and audit entries.
import { z } from 'zod';
import { CHANNEL_KINDS, ChannelKind } from './channels.js';
import { CHAIN_BREAKS, Page, TimeFilter, Timestamp } from './common.js';
import { ContextEnvelope, ConversationStatus, Option } from './converse.js';
import { Citation } from './knowledge.js';
import { Actor } from './people.js';

export const Turn = z.object({
  role: z.enum(['user', 'agent']),
  message: z.string(),
  timestamp: Timestamp,
  phase: z.string().optional().describe('Agent turns: the phase the reply came from'),
  options: z.array(Option).optional().describe('Agent turns: the options offered'),
  author: z.string().optional().describe('Agent turns written by a human operator: who wrote it'),
  citations: z.array(Citation).optional().describe("Agent turns answered from knowledge sources: the passages the answer cites, as the converse response's"),
});
export type Turn = z.infer<typeof Turn>;

export const ConversationChannel = z
  .object({
    kind: z.enum(['web', ...CHANNEL_KINDS]).describe('web: the web chat widget; slack, telegram, whatsapp, sms: a messaging channel (docs/channels.md)'),
    origin: z.string().nullable().describe('web: the origin of the page the widget ran on (checked against the key); null for messaging channels'),
    page_url: z.string().nullable().describe('web: the page, as the widget reported it'),
  })
  .nullable()
  .describe('Where the conversation came from: the web chat widget or a messaging channel, or null for the API');

const RecordBase = z.object({
  id: z.string().uuid(),
  agent_id: z.string().uuid(),
  capability_id: z.string().uuid(),
  user_id: z.string().nullable(),
  status: ConversationStatus,
  outcome: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  completed_at: Timestamp.nullable(),
});

const ConversationRecordSchema = RecordBase.extend({ turns: z.array(Turn) }).describe('A conversation with its turns, oldest first');
export type Conversation = z.infer<typeof ConversationRecordSchema>;
/** The same as Conversation, under the name earlier releases of the client gave it. */
export type ConversationRecord = Conversation;
// Named types keep the contract's declaration within what TypeScript serializes (TS7056).
export const Conversation: z.ZodType<Conversation> = ConversationRecordSchema;

const ConversationSummarySchema = RecordBase.extend({
  capability: z.string(),
  turn_count: z.number().int(),
  channel: ConversationChannel,
});
export type ConversationSummary = z.infer<typeof ConversationSummarySchema>;
export const ConversationSummary: z.ZodType<ConversationSummary> = ConversationSummarySchema;

const ConversationDetailSchema = ConversationRecordSchema.extend({
  capability: z.string(),
  phase: z.string(),
  awaiting_input: z.boolean(),
  agent_version: z.number().int(),
  slots: z.record(z.unknown()),
  context: ContextEnvelope.nullable(),
  erased_at: Timestamp.nullable().describe('When turns, slots, context and user id were erased'),
  channel: ConversationChannel,
}).describe('A conversation with its turns and live state');
export type ConversationDetail = z.infer<typeof ConversationDetailSchema>;
export const ConversationDetail: z.ZodType<ConversationDetail> = ConversationDetailSchema;

export const ListConversationsQuery = z.object({
  status: ConversationStatus.optional(),
  user_id: z.string().min(1).max(256).optional(),
  capability: z.string().min(1).max(64).optional(),
  channel: z
    .enum(['api', 'web', ...CHANNEL_KINDS])
    .optional()
    .describe('web: started in the web chat widget; slack, telegram, whatsapp, sms: in that messaging channel; api: through the API'),
  created_after: TimeFilter.optional(),
  created_before: TimeFilter.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
});

export const AuditType = z.enum([
  'routing_decision',
  'action_call',
  'phase_transition',
  'status_change',
  'turn_timing',
  'error',
  'operator_message',
  'erasure',
  'slot_filled',
  'llm_call',
  'context_changed',
  'channel_delivery',
  'knowledge_search',
]);
export type AuditType = z.infer<typeof AuditType>;

/** Erasure (docs/security.md) reduces an entry's data to a skeleton and marks it. */
const erased = z.literal(true).optional().describe('Present when erasure reduced this entry to its skeleton');

export const RoutingDecisionData = z.object({
  strategy: z.enum(['classifier', 'sticky', 'fallback', 'llm']),
  selected: z.object({ capability: z.string(), capability_id: z.string().uuid(), score: z.number() }),
  candidates: z.array(z.object({ capability: z.string(), score: z.number(), eligible: z.boolean(), reason: z.string().optional() })),
  threshold: z.number().describe("The author's routing.threshold, else the calibrated one"),
  similarity: z.number().optional().describe("Cosine similarity to the best capability's closest example"),
  min_similarity: z.number().optional().describe("The author's routing.min_similarity, else the calibrated one"),
  calibration: z.enum(['held_out', 'default']).optional().describe('How the router calibrated its thresholds (used where the author set none)'),
  reason: z
    .string()
    .optional()
    .describe('best_match, out_of_scope, background, below_threshold, low_similarity, not_entitled, switch, no_routable_capability, llm, llm_failed'),
  from: z.object({ capability: z.string(), phase: z.string().nullable() }).optional().describe('switch: where the conversation was'),
  switch_threshold: z.number().optional(),
  llm: z
    .object({ model: z.string(), duration_ms: z.number(), answer: z.string().nullable(), error: z.string().optional() })
    .optional()
    .describe('What the LLM provider answered, when it was asked'),
  model: z
    .string()
    .optional()
    .describe(
      "Which router model decided: tfidf-logreg-v3 (lexical), tfidf-logreg-v4+<word vectors>@<version>/<words> (lexical and word vectors), or tfidf-logreg-v4+embeddings:<model> (lexical and the model server's embeddings); a router stored by an earlier method names it while it is trained again",
    ),
  embeddings: z
    .object({
      model: z.string(),
      duration_ms: z.number().optional().describe("How long the message's embedding took, when it was asked for"),
      error: z.string().optional().describe('Why the embedding did not come (time-out, budget, server error): the local router decided'),
      unavailable: z
        .string()
        .optional()
        .describe("Why the agent has no router of the server's embeddings yet (being trained, or its training failed): the local router decided"),
    })
    .optional()
    .describe("With LLM_EMBEDDINGS_MODEL: the model server's embeddings, and whether they decided"),
  lexical: z
    .enum(['language', 'off', 'not_installed', 'unreadable', 'stored'])
    .optional()
    .describe(
      'Why the router used no word vectors: language (the agent is not English), off (ROUTER_VECTORS=off), not_installed (no vectors package), unreadable (its converted file could not be read), stored (a router stored without them answers while it is trained again with them)',
    ),
  background: z
    .number()
    .optional()
    .describe("Probability of the router's implicit background class (everyday messages), for an agent whose fallback has no examples"),
});

export const ActionCallData = z.object({
  action: z.string(),
  request: z.object({
    method: z.string(),
    url: z.string().optional().describe('Absent once erased'),
    headers: z.record(z.string()).optional().describe('Absent once erased'),
    body: z.unknown().optional().describe('The JSON body sent, if any (absent once erased)'),
  }),
  response: z.object({ status: z.number().int(), body: z.unknown().optional().describe('Absent once erased') }).nullable(),
  outcome: z.enum(['ok', 'http_error', 'timeout', 'network_error', 'blocked']),
  attempts: z.number().int(),
  error: z.string().optional(),
  via: z.literal('tool').optional().describe("Present when a generative phase's model called the action as a tool"),
  erased,
});

export const LlmCallData = z.object({
  model: z.string(),
  capability: z.string(),
  phase: z.string(),
  step: z.number().int().describe('1, 2, … within the user message'),
  duration_ms: z.number(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  finish_reason: z.string().nullable(),
  text: z.string().describe('What the model wrote (emptied by erasure)'),
  tool_calls: z
    .array(z.object({ name: z.string(), arguments: z.unknown().describe('The arguments the model gave (any JSON)') }))
    .describe('Arguments are emptied by erasure'),
  passages: z.array(z.object({ id: z.string(), score: z.number() })).describe('Knowledge passages put in the prompt'),
  streamed: z.boolean().optional(),
  grounding: z
    .object({
      supported: z.boolean().describe('Every claim found a cited passage holding enough of it: the text was said'),
      cited: z.array(z.string()).describe('The passage ids the text names'),
      claims: z.array(
        z.object({
          sentence: z.string().describe('Emptied by erasure'),
          passage: z.string().nullable().describe('The cited passage that holds most of it'),
          support: z.number().describe("The share of the sentence's content words that passage holds (0 when it lacks a number the sentence states)"),
          missing_numbers: z.array(z.string()).optional(),
        }),
      ),
    })
    .optional()
    .describe("A grounded phase's check of the text against the passages it cites (docs/generative.md)"),
  erased,
});

export const PhaseTransitionData = z.object({
  capability: z.string(),
  from: z.string().nullable(),
  to: z.string(),
});

const ActedBy = Actor.optional().describe(
  'Who did it through the API: a person signed in (issuer, subject, email), a key, or the gateway of AUTH_MODE=header; absent when the service did it, and on entries older than actors',
);

export const StatusChangeData = z.object({
  from: ConversationStatus.nullable(),
  to: ConversationStatus,
  reason: z.string(),
  outcome: z.string().nullable(),
  actor: ActedBy,
});

/** The turns a write added, each with the SHA-256 that chains its text into the audit log. */
export const TurnHashes = z
  .array(z.object({ index: z.number().int(), hash: z.string() }))
  .describe('The turns this call wrote, with their hashes (see audit-logs/verify)');

export const TurnTimingData = z.object({
  total_ms: z.number(),
  routing_ms: z.number(),
  engine_ms: z.number(),
  actions_ms: z.number(),
  llm_ms: z.number().optional().describe('Time spent waiting on the language model (generative phases)'),
  storage_ms: z.number(),
  turns: TurnHashes.optional(),
  masked: z
    .record(z.string(), z.number().int())
    .optional()
    .describe("What the agent's privacy policy masked in the turn's two messages, by type (email, phone, card…): counts, never values (docs/privacy.md)"),
  state: z
    .string()
    .optional()
    .describe(
      "SHA-256 of the conversation's state as the turn left it: version, user, status, outcome, capability, phase, slots, context and channel (docs/security.md); verification compares the stored conversation with it",
    ),
  erased,
});

export const OperatorMessageData = z.object({
  author: z.string().describe('The name shown: as given, else the signed-in person\'s email, else "operator"'),
  actor: ActedBy,
  turns: TurnHashes,
  masked: z.record(z.string(), z.number().int()).optional().describe("What the agent's privacy policy masked in the person's words, by type (docs/privacy.md)"),
  erased,
});

export const SlotFilledData = z.object({
  slot: z.string(),
  phase: z.string().describe('The collect phase that was skipped because the message already held its value'),
  capability: z.string(),
  source: z.string().describe('The words of the message the value was read from (emptied by erasure)'),
  erased,
});

export const ContextChangedData = z.object({
  context: z.unknown().describe("The conversation's context envelope from this turn on, as merged (emptied by erasure)"),
  channel: ConversationChannel.optional().describe('On the first entry of a conversation of the web chat widget: where it came from'),
  erased,
});

export const ChannelDeliveryData = z.object({
  channel: ChannelKind,
  delivery_id: z.string(),
  source: z.enum(['reply', 'operator']),
  status: z.enum(['sent', 'failed', 'refused']),
  attempts: z.number().int(),
  calls: z.number().int(),
  latency_ms: z.number().nullable().describe('From the reply being stored to its last call accepted'),
  provider_message_ids: z.array(z.string()),
  error: z.string().nullable(),
});

export const KnowledgeSearchData = z.object({
  capability: z.string(),
  phase: z.string(),
  mode: z.enum(['answer', 'generate']).describe('An answer phase, or a generative phase putting passages in its prompt'),
  sources: z.array(z.string()).describe('The knowledge sources searched'),
  snapshot: z.number().int().optional().describe('The knowledge snapshot searched, when the version pins one (`knowledge_updates: release`)'),
  min_confidence: z.number().optional().describe("The answer phase's threshold"),
  answered: z.boolean().optional().describe('Whether the best passage held enough of the question to be said'),
  passages: z.array(z.object({ id: z.string(), score: z.number(), confidence: z.number() })).describe('Passages found, best first'),
  error: z.string().optional().describe('Why the sources could not be searched'),
});

export const ErasureData = z.object({
  erased_at: Timestamp,
  through_sequence: z.number().int().describe('Entries up to this sequence may have had their data reduced to a skeleton'),
});

export const ErrorData = z.object({ code: z.string(), message: z.string(), erased }).passthrough();

const entry = <T extends string, D extends z.ZodTypeAny>(type: T, data: D) =>
  z.object({
    id: z.string().uuid(),
    conversation_id: z.string().uuid(),
    sequence: z.number().int().describe('1, 2, … per conversation'),
    turn_index: z.number().int().nullable().describe('Index in turns of the user turn that caused it'),
    type: z.literal(type),
    request_id: z.string(),
    timestamp: Timestamp,
    duration_ms: z.number().nullable(),
    data,
    hash: z.string().nullable().describe('SHA-256 chaining this entry to the previous one (see audit-logs/verify)'),
  });

export const RoutingDecisionEntry = entry('routing_decision', RoutingDecisionData);
export type RoutingDecisionData = z.infer<typeof RoutingDecisionData>;
export const ActionCallEntry = entry('action_call', ActionCallData);
export const PhaseTransitionEntry = entry('phase_transition', PhaseTransitionData);
export const StatusChangeEntry = entry('status_change', StatusChangeData);
export const TurnTimingEntry = entry('turn_timing', TurnTimingData);
export const ErrorEntry = entry('error', ErrorData);
export const OperatorMessageEntry = entry('operator_message', OperatorMessageData);
export const ErasureEntry = entry('erasure', ErasureData);
export const SlotFilledEntry = entry('slot_filled', SlotFilledData);
export const LlmCallEntry = entry('llm_call', LlmCallData);
export const ContextChangedEntry = entry('context_changed', ContextChangedData);
export const ChannelDeliveryEntry = entry('channel_delivery', ChannelDeliveryData);
export const KnowledgeSearchEntry = entry('knowledge_search', KnowledgeSearchData);

export const AuditEntry = z.discriminatedUnion('type', [
  RoutingDecisionEntry,
  ActionCallEntry,
  PhaseTransitionEntry,
  StatusChangeEntry,
  TurnTimingEntry,
  ErrorEntry,
  OperatorMessageEntry,
  ErasureEntry,
  SlotFilledEntry,
  LlmCallEntry,
  ContextChangedEntry,
  ChannelDeliveryEntry,
  KnowledgeSearchEntry,
]);
export type AuditEntry = z.infer<typeof AuditEntry>;

export const AuditLogQuery = z.object({
  type: AuditType.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().max(500).optional(),
});

const AuditLogPageSchema = z
  .object({
    conversation_id: z.string().uuid(),
    data: z.array(AuditEntry),
    next_cursor: z.string().nullable(),
  })
  .describe('Audit entries, oldest first');
export type AuditLogPage = z.infer<typeof AuditLogPageSchema>;
// A named type keeps the contract's declaration within what TypeScript serializes (TS7056).
export const AuditLogPage: z.ZodType<AuditLogPage> = AuditLogPageSchema;

export const OperatorMessage = z.object({
  message: z.string().trim().min(1, 'must not be empty').describe('What the human operator says'),
  author: z.string().trim().min(1).max(200).optional().describe('Who wrote it (default "operator")'),
});

export const OperatorMessageResult = z
  .object({ conversation_id: z.string().uuid(), turn_index: z.number().int(), turn: Turn })
  .describe('The agent turn written by the operator');

export const StatusChange = z.object({
  status: ConversationStatus,
  outcome: z
    .string()
    .regex(/^[a-z][a-z0-9_]*$/, 'must match [a-z][a-z0-9_]*')
    .max(64)
    .optional()
    .describe('For completed: the outcome (default "resolved")'),
});

export const Erased = z.object({ erased: z.number().int().describe('How many conversations were erased') });

export const WebhookDelivery = z.object({
  id: z.string().uuid(),
  conversation_id: z.string().uuid(),
  event: z.string(),
  url: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  next_attempt_at: Timestamp.nullable(),
  created_at: Timestamp,
  delivered_at: Timestamp.nullable(),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  history: z.array(
    z.object({ attempt: z.number().int(), at: Timestamp, status: z.number().int().nullable(), error: z.string().nullable(), duration_ms: z.number() }),
  ),
});

export const WebhookDeliveriesQuery = z.object({
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
  conversation_id: z.string().uuid().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
});

export const AuditVerification = z
  .object({
    conversation_id: z.string().uuid(),
    entries: z.number().int(),
    keyed_entries: z
      .number()
      .int()
      .describe('Entries whose hash is an HMAC under the operator key (AUDIT_CHAIN_KEY): only those prove who wrote them (docs/security.md)'),
    keyed_from: z
      .number()
      .int()
      .nullable()
      .optional()
      .describe(
        'With AUDIT_CHAIN_KEY: the entry from which every one is keyed under it (null when none is). Entries before it were written before the key and verify only because a later keyed entry or the chain’s seal vouches for them: they prove consistency, not who wrote them',
      ),
    valid: z.boolean(),
    first_broken: z
      .object({
        sequence: z.number().int(),
        reason: z.enum([...CHAIN_BREAKS, 'turn_mismatch', 'turn_unchained', 'state_mismatch']),
        turn_index: z.number().int().optional().describe('For turn_mismatch and turn_unchained: the turn whose text does not match its chained hash'),
      })
      .describe(
        "`not_keyed`: with AUDIT_CHAIN_KEY, an entry not keyed under it that no later keyed entry and no seal vouches for (a chain rebuilt without the key); `state_mismatch`: the stored conversation's state is not the one its newest turn chained",
      )
      .nullable(),
    first_sequence: z
      .number()
      .int()
      .optional()
      .describe(
        'Present when the chain is verified from a later entry than the first: the history horizon (HISTORY_RETENTION_DAYS) dropped the entries before it',
      ),
  })
  .describe('The audit chain recomputed, and its first broken link');

export const ConversationPage = Page(ConversationSummary);

export const WebhookDeliveryPage = Page(WebhookDelivery);
