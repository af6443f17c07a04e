// A conversation as the store holds it, for store tests: active, two turns and one audit entry
// in, at T0 unless `over` says otherwise.
import { randomUUID } from 'node:crypto';
import type { Conversation } from '../../server/src/domain.js';
import type { ConversationStore, TurnWrite } from '../../server/src/store/conversations/conversation-store.js';

const T0 = '2026-11-22T10:00:00.000Z';

export function conversation(tenantId: string, agentId: string, over: Partial<Conversation> = {}): Conversation {
  return {
    id: randomUUID(),
    tenantId,
    agentId,
    agentVersion: 1,
    userId: 'u1',
    status: 'active',
    outcome: null,
    capability: 'c',
    capabilityId: randomUUID(),
    phase: 'p',
    awaitingInput: true,
    flow: { slots: { a: 1 }, actions: {}, attempts: 0, wait: 'open' },
    context: null,
    turnCount: 2,
    auditSeq: 1,
    createdAt: T0,
    updatedAt: T0,
    completedAt: null,
    lastUserTurnAt: T0,
    inactiveAfter: null,
    erasedAt: null,
    auditHash: null,
    eventSeq: 0,
    channel: null,
    ...over,
  };
}

/**
 * Commits one call on a conversation at `at` through the store: `next` as it becomes from
 * `stored` (absent: a new conversation), two turns, a timing audit entry and an event row, and
 * `extra` (webhook deliveries and alike); answers the conversation as stored after it.
 */
export async function commitTurn(
  store: ConversationStore,
  next: Conversation,
  at: string,
  stored?: Conversation,
  extra: Partial<TurnWrite> = {},
): Promise<Conversation> {
  const idx = stored?.turnCount ?? 0;
  const w: TurnWrite = {
    conversation: next,
    isNew: !stored,
    stored,
    expectedAuditSeq: stored?.auditSeq ?? 0,
    previousAuditHash: stored?.auditHash ?? null,
    turns: [
      { idx, role: 'user', message: `hello at ${at}`, timestamp: at },
      { idx: idx + 1, role: 'agent', message: 'hi', timestamp: at, phase: 'p' },
    ],
    audit: [{ type: 'turn_timing', turnIndex: idx, timestamp: at, durationMs: 1, data: { total_ms: 1 } }],
    events: [{ type: 'turn.created', data: { text: `at ${at}` }, createdAt: at }],
    requestId: `r-${at}`,
    ...extra,
  };
  await store.exclusive(next.id, stored ? { tenantId: next.tenantId, id: next.id } : null, (u) => u.commit(w));
  return (await store.get(next.tenantId, next.agentId, next.id))!;
}
