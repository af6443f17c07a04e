// Domain types shared by the engine, the service and the store.
import type { AuditType, ChannelKind, Citation, ContextEnvelope, ConversationStatus, Option, ReviewReason } from '@switchboard/contract';

export interface ActionResult {
  ok: boolean;
  status: number;
  body: unknown;
}

/** What a conversation carries between turns, besides its columns. */
export interface FlowState {
  slots: Record<string, unknown>;
  actions: Record<string, ActionResult>;
  /** Failed attempts at the collect the conversation waits on. */
  attempts: number;
  /** `collecting`: waits on the phase's collect; `generating`: stands in a generative phase; `open`: the flow ran out of phases or stopped, the next message is routed. */
  wait: 'collecting' | 'open' | 'closed' | 'generating';
  /** Slots the message that chose the capability filled: their collect phases are passed over once. */
  prefilled?: string[];
  /** Input and output tokens the conversation's model calls have spent. */
  tokens?: number;
  /** A person has answered the escalated conversation: the agent says nothing automatic in it any more (it only closes from here). */
  answered?: true;
  /** The last routed message, for the review inbox's findings of later turns (service/review-findings.ts); erasure drops it. */
  review?: ReviewMark;
  /** Review-inbox findings the conversation has added (capped by REVIEW_MAX_PER_CONVERSATION). */
  reviewCount?: number;
}

/** A user message a turn showed is worth a review (service/review-findings.ts), as the turn's write stores it. */
export interface ReviewFinding {
  reason: ReviewReason;
  /** sha256 of the reason and the message's normalised text: near-identical messages share it. */
  groupKey: string;
  turnIndex: number;
  /** The routing decision's audit sequence, when a decision routed the message. */
  auditSequence: number | null;
  message: string;
  /** The capability the message was routed to (or the flow it was in). */
  capability: string;
  version: number;
  detail: Record<string, unknown>;
  at: string;
}

/** A routed message as the conversation remembers it for the review inbox. */
export interface ReviewMark {
  /** Its user turn's index. */
  turn: number;
  /** Its routing decision's audit sequence. */
  seq: number;
  capability: string;
  /** Its first REVIEW_MESSAGE_CHARS characters. */
  message: string;
  version: number;
}

export interface Conversation {
  id: string;
  tenantId: string;
  agentId: string;
  agentVersion: number;
  userId: string | null;
  status: ConversationStatus;
  outcome: string | null;
  capability: string;
  capabilityId: string;
  phase: string;
  awaitingInput: boolean;
  flow: FlowState;
  context: ContextEnvelope | null;
  turnCount: number;
  auditSeq: number;
  /** Hash of the newest audit entry: the head of the conversation's audit chain. */
  auditHash: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  lastUserTurnAt: string;
  /** When the conversation becomes abandoned (active and paused ones only). */
  inactiveAfter: string | null;
  erasedAt: string | null;
  /** Number of the conversation's newest event row (event ids are `seq-index`, per conversation). */
  eventSeq: number;
  /** Where the conversation came from when not the API: the web chat widget, on a page of `origin`. */
  channel: Channel | null;
}

/**
 * Where a conversation came from: the web chat widget (the page's origin, checked against the
 * key, and its URL as the page said), or a messaging channel (origin: the channel's id).
 */
export interface Channel {
  kind: 'web' | ChannelKind;
  origin: string;
  pageUrl: string | null;
}

type EventType = 'turn.created' | 'status.changed' | 'phase.changed';

export interface EventDraft {
  type: EventType;
  data: Record<string, unknown>;
  createdAt: string;
}

export type WebhookEvent = 'conversation.completed' | 'conversation.escalated' | 'conversation.abandoned';

export interface WebhookDraft {
  id: string;
  agentId: string;
  event: WebhookEvent;
  url: string;
  secretName: string | null;
  payload: Record<string, unknown>;
  /** The audit sequence of the status change: orders deliveries within a conversation. */
  seq: number;
  createdAt: string;
}

export interface TurnRow {
  idx: number;
  role: 'user' | 'agent';
  message: string;
  timestamp: string;
  phase?: string | null;
  options?: Option[] | null;
  author?: string | null;
  /** Agent turns: the passages the answer cites. */
  citations?: Citation[];
}

export interface AuditDraft {
  type: AuditType;
  turnIndex: number | null;
  timestamp: string;
  durationMs: number | null;
  data: Record<string, unknown>;
}

export interface AuditRow extends AuditDraft {
  id: string;
  conversationId: string;
  sequence: number;
  requestId: string;
  hash: string | null;
}

/** What erasure keeps of a conversation's records (decided in service/erasure.ts, applied by the store). */
export interface ErasureRules {
  /** Audit entry types whose data carries something of the person. */
  auditTypes: AuditType[];
  /** What an entry of one of those types keeps. */
  skeleton(type: AuditType, data: Record<string, unknown>): Record<string, unknown>;
  /** What a webhook payload keeps. */
  webhookPayload(payload: Record<string, unknown>): Record<string, unknown>;
  /** What a replay's result for the conversation keeps. */
  replayResult(result: Record<string, unknown>): Record<string, unknown>;
}

/** The counters of an agent's hourly rows (table agent_stats; service/agent-stats.ts says what each counts). */
export const STAT_COUNTERS = ['started', 'completed', 'escalated', 'abandoned', 'routed', 'fallback'] as const;
export type StatCounter = (typeof STAT_COUNTERS)[number];

/** One row's worth of an agent's hourly counters that a write adds (service/agent-stats.ts). */
export type StatDelta = {
  /** The UTC hour, as the first 13 characters of an ISO timestamp ('2026-11-23T12'). */
  hour: string;
  /** The agent version the conversation runs on. */
  version: number;
  capability: string;
  /** The outcome a close counts under; '' for starts and routing decisions. */
  outcome: string;
} & Record<StatCounter, number>;

/** The counters of an agent's hourly knowledge rows (table knowledge_stats; service/agents/agent-stats.ts says what each counts). */
export const KNOWLEDGE_COUNTERS = ['cited', 'unanswered'] as const;

/** One row's worth of an agent's hourly knowledge counters that a write adds, per source ('' for searches that found nothing). */
export type KnowledgeDelta = { hour: string; version: number; source: string } & Record<(typeof KNOWLEDGE_COUNTERS)[number], number>;

/** The measures of agent_closes that count the web chat widget's conversations: `web_started`, `web_completed`, … (value 0). */
export const CHANNEL_MEASURES = ['started', 'completed', 'escalated', 'abandoned'] as const;
/** The prefix of each channel's measures in agent_closes (kept short: measures hold 16 characters). */
export const CHANNEL_PREFIX = { web: 'web', slack: 'sl', telegram: 'tg', whatsapp: 'wa', sms: 'sms' } as const satisfies Record<'web' | ChannelKind, string>;

/**
 * A row's worth of agent_closes (service/agent-stats.ts): a conversation closed (completed or
 * abandoned) in an hour, for the medians of analytics, or one of the web chat widget's
 * conversations started or closed in it.
 */
export interface CloseDelta {
  hour: string;
  /** The agent version the conversation ran on. */
  version: number;
  /**
   * 'turns': its turn count; 'seconds': its duration, as a bucket's lower bound; `web_<counter>` (value 0): a widget conversation counted;
   * 'capped_conv' / 'capped_hour' (value 0): review-inbox findings left out by the cap per conversation / per agent and hour.
   */
  measure: 'turns' | 'seconds' | 'capped_conv' | 'capped_hour' | `${(typeof CHANNEL_PREFIX)[keyof typeof CHANNEL_PREFIX]}_${(typeof CHANNEL_MEASURES)[number]}`;
  value: number;
  n: number;
}
