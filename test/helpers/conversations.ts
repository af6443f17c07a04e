// A conversation as the store holds it, for store tests: active, two turns and one audit entry
// in, at T0 unless `over` says otherwise.
import { randomUUID } from 'node:crypto';
import type { Conversation } from '../../server/src/domain.js';

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
