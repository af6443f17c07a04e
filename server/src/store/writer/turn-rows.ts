// A turn's write as rows of each table, and rows read back as domain values: pure functions
// shared by the writer of each database (sqlite-writer.ts, postgres-writer.ts) and the reads.
import { randomUUID } from 'node:crypto';
import type { Citation, ContextEnvelope, Option } from '@switchboard/contract';
import {
  KNOWLEDGE_COUNTERS,
  STAT_COUNTERS,
  type AuditDraft,
  type AuditRow,
  type Channel,
  type CloseDelta,
  type Conversation,
  type EventDraft,
  type FlowState,
  type KnowledgeDelta,
  type ReviewFinding,
  type StatDelta,
  type TurnRow,
  type WebhookDraft,
} from '../../domain.js';
import { dataHash, entryHash } from '../../lib/audit-chain.js';
import type { AuditTableRow, ConversationTableRow, TurnTableRow } from '../rows.js';

/** Everything one call on a conversation commits, in one transaction. */
export interface TurnWrite {
  conversation: Conversation;
  isNew: boolean;
  /** The audit sequence the stored row had when it was read; guards against a lost update. */
  expectedAuditSeq: number;
  /** The audit chain head the stored row had when it was read (null before the first entry). */
  previousAuditHash: string | null;
  /** The conversation as it was read, for an update: the indexed columns it has the same values for are left alone. */
  stored?: Conversation;
  turns: TurnRow[];
  audit: AuditDraft[];
  requestId: string;
  idempotency?: { agentId: string; key: string; requestHash: string; response: unknown };
  events?: EventDraft[];
  webhooks?: WebhookDraft[];
  /** What the write adds to its agent's hourly counters (service/agent-stats.ts). */
  stats?: StatDelta[];
  /** The conversation's turns and duration when the write closes it (service/agent-stats.ts). */
  closes?: CloseDelta[];
  /** What the write adds to its agent's hourly knowledge counters, per source (service/agent-stats.ts). */
  knowledge?: KnowledgeDelta[];
  /** Messages the turn shows are worth a review (service/review-findings.ts). */
  review?: ReviewFinding[];
}

const toJson = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

export function rowToConversation(r: ConversationTableRow): Conversation {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    agentId: r.agent_id,
    agentVersion: Number(r.agent_version),
    userId: r.user_id,
    status: r.status,
    outcome: r.outcome,
    capability: r.capability,
    capabilityId: r.capability_id,
    phase: r.phase,
    awaitingInput: Boolean(r.awaiting_input),
    flow: JSON.parse(r.state) as FlowState,
    context: r.context ? (JSON.parse(r.context) as ContextEnvelope) : null,
    turnCount: Number(r.turn_count),
    auditSeq: Number(r.audit_seq),
    auditHash: r.audit_hash ?? null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    lastUserTurnAt: r.last_user_turn_at,
    inactiveAfter: r.inactive_after ?? null,
    erasedAt: r.erased_at ?? null,
    eventSeq: Number(r.event_seq ?? 0),
    channel: r.channel ? { kind: r.channel as Channel['kind'], origin: r.origin ?? '', pageUrl: r.page_url ?? null } : null,
  };
}

function conversationToRow(c: Conversation, head: { auditHash: string | null; eventSeq: number } = c) {
  return {
    id: c.id,
    tenant_id: c.tenantId,
    agent_id: c.agentId,
    agent_version: c.agentVersion,
    user_id: c.userId,
    status: c.status,
    outcome: c.outcome,
    capability: c.capability,
    capability_id: c.capabilityId,
    phase: c.phase,
    awaiting_input: c.awaitingInput,
    state: JSON.stringify(c.flow),
    context: toJson(c.context),
    turn_count: c.turnCount,
    audit_seq: c.auditSeq,
    audit_hash: head.auditHash,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
    completed_at: c.completedAt,
    last_user_turn_at: c.lastUserTurnAt,
    inactive_after: c.inactiveAfter,
    inactive_bucket: deadlineBucket(c.inactiveAfter),
    erased_at: c.erasedAt,
    event_seq: head.eventSeq,
    channel: c.channel?.kind ?? null,
    origin: c.channel?.origin ?? null,
    page_url: c.channel?.pageUrl ?? null,
  };
}

export function rowToTurn(r: Omit<TurnTableRow, 'conversation_id' | 'tenant_id'>): TurnRow {
  return {
    idx: Number(r.idx),
    role: r.role,
    message: r.message,
    timestamp: r.timestamp,
    phase: r.phase,
    options: r.options ? (JSON.parse(r.options) as Option[]) : null,
    author: r.author,
    ...(r.citations ? { citations: JSON.parse(r.citations) as Citation[] } : {}),
  };
}

export function rowToAudit(r: AuditTableRow): AuditRow {
  return {
    id: r.id,
    conversationId: r.conversation_id,
    sequence: Number(r.sequence),
    turnIndex: r.turn_index === null ? null : Number(r.turn_index),
    type: r.type,
    requestId: r.request_id,
    timestamp: r.timestamp,
    durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
    data: JSON.parse(r.data) as Record<string, unknown>,
    hash: r.hash ?? null,
  };
}

function turnRows(w: TurnWrite) {
  const c = w.conversation;
  return w.turns.map((t) => ({
    conversation_id: c.id,
    idx: t.idx,
    tenant_id: c.tenantId,
    role: t.role,
    message: t.message,
    phase: t.phase ?? null,
    options: t.options ? JSON.stringify(t.options) : null,
    author: t.author ?? null,
    timestamp: t.timestamp,
    citations: t.citations?.length ? JSON.stringify(t.citations) : null,
  }));
}

/** The write's audit rows, chained onto the conversation's previous head (keyed with `chainKey`); the row's new head is the last hash. */
export function auditRows(w: TurnWrite, chainKey?: Buffer) {
  const c = w.conversation;
  let seq = w.expectedAuditSeq;
  let previous = w.previousAuditHash;
  const rows = w.audit.map((a) => {
    const data = JSON.stringify(a.data);
    // One object, in the table's column order, that is also the entry's chained fields.
    const row = {
      id: randomUUID(),
      conversation_id: c.id,
      sequence: ++seq,
      tenant_id: c.tenantId,
      turn_index: a.turnIndex,
      type: a.type,
      request_id: w.requestId,
      timestamp: a.timestamp,
      duration_ms: a.durationMs,
      data,
      data_hash: dataHash(data),
      hash: '',
    };
    row.hash = entryHash(previous, row, row.data_hash, chainKey);
    previous = row.hash;
    return row;
  });
  return { rows, head: previous };
}

function idempotencyRow(w: TurnWrite, i: NonNullable<TurnWrite['idempotency']>) {
  return {
    tenant_id: w.conversation.tenantId,
    agent_id: i.agentId,
    key: i.key,
    request_hash: i.requestHash,
    conversation_id: w.conversation.id,
    response: JSON.stringify(i.response),
    created_at: w.conversation.updatedAt,
  };
}

/** The event row of a write (numbered per conversation), and the conversation's new event number. */
type EventRow = {
  tenant_id: string;
  conversation_id: string;
  seq: number;
  events: string;
  created_at: string;
};

function eventRows(w: TurnWrite): { rows: EventRow[]; seq: number } {
  const c = w.conversation;
  if (!w.events?.length) return { rows: [], seq: c.eventSeq };
  const seq = c.eventSeq + 1;
  return {
    rows: [
      {
        tenant_id: c.tenantId,
        conversation_id: c.id,
        seq,
        events: JSON.stringify(w.events.map((e) => ({ type: e.type, data: e.data }))),
        created_at: c.updatedAt,
      },
    ],
    seq,
  };
}

function webhookRows(w: TurnWrite) {
  return (w.webhooks ?? []).map((h) => ({
    id: h.id,
    tenant_id: w.conversation.tenantId,
    agent_id: h.agentId,
    conversation_id: w.conversation.id,
    event: h.event,
    url: h.url,
    secret_name: h.secretName,
    payload: JSON.stringify(h.payload),
    status: 'pending' as const,
    attempts: 0,
    next_attempt_at: h.createdAt,
    created_at: h.createdAt,
    seq: h.seq,
  }));
}

/**
 * The ten minutes an inactivity deadline falls in (its first 15 characters, `2026-11-27T16:4`),
 * the inactivity sweep's index key (migration 023): a turn moves the deadline but, unless it crosses
 * a ten-minute mark, not this, so its update of the conversation changes no indexed column and
 * PostgreSQL makes it a heap-only (HOT) update that writes no index entry at all. The sweep reads
 * the buckets up to the current one and compares the deadlines themselves (conversation-store.ts
 * dueForAbandonment); `substr(inactive_after, 1, 15)` is the same in SQL.
 */
export const bucketOf = (at: string): string => at.slice(0, 15);
const deadlineBucket = (inactiveAfter: string | null): string | null => (inactiveAfter === null ? null : bucketOf(inactiveAfter));

/**
 * Indexed columns of conversations that most writes leave as they are. On SQLite an update
 * rewrites the entries of every index that has a column it sets, whether the value changed or
 * not, so its writer leaves these out of an update that does not change them.
 */
const STABLE_INDEXED_FIELDS = {
  status: (c: Conversation) => c.status,
  user_id: (c: Conversation) => c.userId,
  capability: (c: Conversation) => c.capability,
  inactive_bucket: (c: Conversation) => deadlineBucket(c.inactiveAfter),
} as const satisfies Record<string, (c: Conversation) => unknown>;
export type StableIndexed = keyof typeof STABLE_INDEXED_FIELDS;
export const STABLE_INDEXED = Object.keys(STABLE_INDEXED_FIELDS) as readonly StableIndexed[];

/** Those of STABLE_INDEXED that an update must set: all of them unless the stored conversation is known. */
function changedIndexed(w: TurnWrite): readonly StableIndexed[] {
  const before = w.stored;
  if (!before) return STABLE_INDEXED;
  return STABLE_INDEXED.filter((c) => STABLE_INDEXED_FIELDS[c](before) !== STABLE_INDEXED_FIELDS[c](w.conversation));
}

/** The rows of one write, as both writers insert them. */
export interface WriteRows {
  isNew: boolean;
  /** The version of the kept row the call worked from (kept-rows.ts): the update applies only to that version. */
  readVersion?: string;
  /** The audit sequence the stored row must still have: an update of a row changed since is refused. */
  expectedAuditSeq: number;
  conversation: ReturnType<typeof conversationToRow>;
  /** Of STABLE_INDEXED, the columns an update sets (the others keep their stored values). */
  setIndexed: readonly StableIndexed[];
  turns: ReturnType<typeof turnRows>;
  audit: ReturnType<typeof auditRows>['rows'];
  events: EventRow[];
  webhooks: ReturnType<typeof webhookRows>;
  idempotency: ReturnType<typeof idempotencyRow> | null;
  stats: StatRow[];
  closes: CloseRow[];
  knowledgeStats: KnowledgeStatRow[];
  reviewGroups: ReturnType<typeof reviewRows>['groups'];
  reviewOccurrences: ReturnType<typeof reviewRows>['occurrences'];
}

/** The review inbox's rows of a write: its findings, and the open groups they join (one row per group, counted). */
function reviewRows(w: TurnWrite) {
  const c = w.conversation;
  const groups = new Map<
    string,
    {
      id: string;
      tenant_id: string;
      agent_id: string;
      reason: string;
      group_key: string;
      open_key: string;
      count: number;
      first_seen_at: string;
      last_seen_at: string;
      status: 'open';
    }
  >();
  const occurrences = (w.review ?? []).map((f) => {
    const g = groups.get(f.groupKey);
    if (g) g.count++;
    else {
      groups.set(f.groupKey, {
        id: randomUUID(),
        tenant_id: c.tenantId,
        agent_id: c.agentId,
        reason: f.reason,
        group_key: f.groupKey,
        open_key: f.groupKey,
        count: 1,
        first_seen_at: f.at,
        last_seen_at: f.at,
        status: 'open',
      });
    }
    return {
      id: randomUUID(),
      tenant_id: c.tenantId,
      agent_id: c.agentId,
      group_key: f.groupKey,
      acted_group: null,
      conversation_id: c.id,
      turn_index: f.turnIndex,
      audit_sequence: f.auditSequence,
      agent_version: f.version,
      reason: f.reason,
      message: f.message,
      capability: f.capability,
      detail: JSON.stringify(f.detail),
      created_at: f.at,
    };
  });
  // Sorted by key, so that concurrent writes take the groups' rows in the same order.
  return { groups: [...groups.values()].sort((a, b) => (a.group_key < b.group_key ? -1 : 1)), occurrences };
}

/** A row of knowledge_stats: an agent's answers citing a source in an hour, or its searches that found nothing. */
export type KnowledgeStatRow = { tenant_id: string; agent_id: string } & { [K in keyof KnowledgeDelta]: KnowledgeDelta[K] };
/** A row of agent_closes: one closed conversation's turns or duration bucket. */
export type CloseRow = { tenant_id: string; agent_id: string } & { [K in keyof CloseDelta]: CloseDelta[K] };

/** A row of agent_stats: the counters one write adds under one key. */
export type StatRow = { tenant_id: string; agent_id: string } & { [K in keyof StatDelta]: StatDelta[K] };

/** The rows of a write: the audit entries chained onto the conversation's head, the events numbered after its last. */
export function writeRows(w: TurnWrite, chainKey?: Buffer): WriteRows {
  const audit = auditRows(w, chainKey);
  const events = eventRows(w);
  return {
    isNew: w.isNew,
    expectedAuditSeq: w.expectedAuditSeq,
    conversation: conversationToRow(w.conversation, { auditHash: audit.head, eventSeq: events.seq }),
    setIndexed: w.isNew ? STABLE_INDEXED : changedIndexed(w),
    turns: turnRows(w),
    audit: audit.rows,
    events: events.rows,
    webhooks: webhookRows(w),
    idempotency: w.idempotency ? idempotencyRow(w, w.idempotency) : null,
    stats: (w.stats ?? []).map((d) => ({ tenant_id: w.conversation.tenantId, agent_id: w.conversation.agentId, ...d })),
    closes: (w.closes ?? []).map((d) => ({ tenant_id: w.conversation.tenantId, agent_id: w.conversation.agentId, ...d })),
    knowledgeStats: (w.knowledge ?? []).map((d) => ({ tenant_id: w.conversation.tenantId, agent_id: w.conversation.agentId, ...d })),
    ...(() => {
      const r = reviewRows(w);
      return { reviewGroups: r.groups, reviewOccurrences: r.occurrences };
    })(),
  };
}

const CONVERSATION_COLUMNS = [
  'id',
  'tenant_id',
  'agent_id',
  'agent_version',
  'user_id',
  'status',
  'outcome',
  'capability',
  'capability_id',
  'phase',
  'awaiting_input',
  'state',
  'context',
  'turn_count',
  'audit_seq',
  'created_at',
  'updated_at',
  'completed_at',
  'last_user_turn_at',
  'inactive_after',
  'inactive_bucket',
  'erased_at',
  'audit_hash',
  'event_seq',
  'channel',
  'origin',
  'page_url',
];

/** Columns a conversation's first write sets and no later one changes (updates leave them out). */
export const INSERT_ONLY_COLUMNS: readonly string[] = ['id', 'tenant_id', 'agent_id', 'created_at', 'channel', 'origin', 'page_url'];
const EVENT_COLUMNS = ['tenant_id', 'conversation_id', 'seq', 'events', 'created_at'];
const WEBHOOK_COLUMNS = [
  'id',
  'tenant_id',
  'agent_id',
  'conversation_id',
  'event',
  'url',
  'secret_name',
  'payload',
  'status',
  'attempts',
  'next_attempt_at',
  'created_at',
  'seq',
];
const TURN_COLUMNS = ['conversation_id', 'idx', 'tenant_id', 'role', 'message', 'phase', 'options', 'author', 'timestamp', 'citations'];
const AUDIT_COLUMNS = [
  'id',
  'conversation_id',
  'sequence',
  'tenant_id',
  'turn_index',
  'type',
  'request_id',
  'timestamp',
  'duration_ms',
  'data',
  'data_hash',
  'hash',
];
/** The key of agent_stats: a write adds its counters to the row of its key. */
export const STAT_KEY = ['tenant_id', 'agent_id', 'hour', 'version', 'capability', 'outcome'];
const STAT_COLUMNS = [...STAT_KEY, ...STAT_COUNTERS];

/** Adds a row of agent_stats to the one with its key (the same statement on both databases). */
export const STAT_UPSERT_TAIL = `on conflict (${STAT_KEY.join(', ')}) do update set ${STAT_COUNTERS.map((c) => `${c} = agent_stats.${c} + excluded.${c}`).join(', ')}`;
/** Adds a row of agent_closes to the one with its key. */
/** The key of agent_closes: a write adds its count to the row of its key. */
export const CLOSE_KEY = ['tenant_id', 'agent_id', 'hour', 'version', 'measure', 'value'];
export const CLOSE_UPSERT_TAIL = `on conflict (${CLOSE_KEY.join(', ')}) do update set n = agent_closes.n + excluded.n`;
/** The key of knowledge_stats: a write adds its counters to the row of its key. */
export const KNOWLEDGE_STAT_KEY = ['tenant_id', 'agent_id', 'hour', 'version', 'source'];
export const KNOWLEDGE_STAT_UPSERT_TAIL = `on conflict (${KNOWLEDGE_STAT_KEY.join(', ')}) do update set ${KNOWLEDGE_COUNTERS.map((c) => `${c} = knowledge_stats.${c} + excluded.${c}`).join(', ')}`;
/** Joins a finding to its open group (the same statement on both databases). */
export const REVIEW_GROUP_UPSERT_TAIL = `on conflict (tenant_id, agent_id, open_key) do update set count = review_groups.count + excluded.count,
  last_seen_at = case when excluded.last_seen_at > review_groups.last_seen_at then excluded.last_seen_at else review_groups.last_seen_at end`;
const IDEMPOTENCY_COLUMNS = ['tenant_id', 'agent_id', 'key', 'request_hash', 'conversation_id', 'response', 'created_at'];

/** The columns each writer fills, per table: the keys of the rows above. */
export const COLUMNS = {
  conversations: CONVERSATION_COLUMNS,
  turns: TURN_COLUMNS,
  audit_entries: AUDIT_COLUMNS,
  conversation_events: EVENT_COLUMNS,
  webhook_deliveries: WEBHOOK_COLUMNS,
  idempotency_keys: IDEMPOTENCY_COLUMNS,
  agent_stats: STAT_COLUMNS,
  agent_closes: [...CLOSE_KEY, 'n'],
  knowledge_stats: [...KNOWLEDGE_STAT_KEY, ...KNOWLEDGE_COUNTERS],
  review_groups: ['id', 'tenant_id', 'agent_id', 'reason', 'group_key', 'open_key', 'count', 'first_seen_at', 'last_seen_at', 'status'],
  review_occurrences: [
    'id',
    'tenant_id',
    'agent_id',
    'group_key',
    'acted_group',
    'conversation_id',
    'turn_index',
    'audit_sequence',
    'agent_version',
    'reason',
    'message',
    'capability',
    'detail',
    'created_at',
  ],
} as const;
