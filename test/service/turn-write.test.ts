// The write of one converse call, built from the engine's result without a database.
import { describe, expect, it } from 'vitest';
import { compileAgent } from '../../server/src/engine/compile.js';
import type { TurnResult } from '../../server/src/engine/run.js';
import { stateHash, turnHash } from '../../server/src/lib/audit-chain.js';
import { buildTurnWrite } from '../../server/src/service/conversations/turn-write.js';
import { compileMasking } from '../../server/src/service/privacy/policy.js';
import { parseDefinition } from '../helpers/agents.js';
import { driveTurn, NOW } from '../helpers/engine.js';

const AGENT_ID = '00000000-0000-4000-8000-000000000001';
const timing = { total_ms: 5, routing_ms: 1, engine_ms: 1, actions_ms: 0, storage_ms: 3 };

const agentOf = () =>
  compileAgent(
    AGENT_ID,
    3,
    parseDefinition({
      name: 'x',
      capabilities: [{ name: 'bye', examples: ['goodbye'], phases: [{ id: 'end', say: 'Bye.', end: 'completed', outcome: 'said_goodbye' }] }],
      webhooks: [{ url: 'https://hooks.example.com/h', events: ['conversation.completed'] }],
    }),
  );

/** One turn of a new conversation saying goodbye (no calls to answer). */
const turn = (agent: Awaited<ReturnType<typeof agentOf>>): TurnResult => driveTurn(agent, 'goodbye').result;

describe('the write of a converse call', () => {
  it('holds the new state, both turns, chained turn hashes, events, webhooks and the idempotency record', async () => {
    const agent = await agentOf();
    const result = turn(agent);
    const { write, response } = buildTurnWrite({
      tenantId: 'acme',
      agent,
      masking: null,
      prior: null,
      conversationId: 'c1',
      userId: 'u1',
      context: null,
      message: 'goodbye',
      result,
      now: NOW,
      requestId: 'r1',
      reviewLowMargin: 0.1,
      reviewMaxPerConversation: 5,
      timing,
      idempotency: { key: 'k', hash: 'h' },
    });
    expect(response).toEqual({
      conversation_id: 'c1',
      response: { message: 'Bye.', phase: 'end', awaiting_input: false, options: [] },
      state: { status: 'completed', capability: 'bye' },
    });
    expect(write.isNew).toBe(true);
    expect(write.conversation).toMatchObject({
      id: 'c1',
      tenantId: 'acme',
      agentId: AGENT_ID,
      agentVersion: 3,
      status: 'completed',
      outcome: 'said_goodbye',
      turnCount: 2,
      completedAt: NOW,
      inactiveAfter: null,
    });
    expect(write.conversation.auditSeq).toBe(result.audit.length + 1);
    expect(write.turns.map((t) => [t.idx, t.role, t.message])).toEqual([
      [0, 'user', 'goodbye'],
      [1, 'agent', 'Bye.'],
    ]);
    const last = write.audit.at(-1)!;
    expect(last.type).toBe('turn_timing');
    expect(last.data).toEqual({
      ...timing,
      turns: write.turns.map((t) => ({ index: t.idx, hash: turnHash('c1', t) })),
      state: stateHash(write.conversation),
    });
    expect(write.events!.map((e) => e.type)).toEqual(['turn.created', 'turn.created', 'phase.changed', 'status.changed', 'status.changed']);
    expect(write.webhooks).toHaveLength(1);
    expect(write.webhooks![0]).toMatchObject({ event: 'conversation.completed', url: 'https://hooks.example.com/h' });
    expect(write.idempotency).toEqual({ agentId: AGENT_ID, key: 'k', requestHash: 'h', response });
  });

  it('continues from the prior state: turn indexes, audit sequence, creation time and user stay', async () => {
    const agent = await agentOf();
    const first = buildTurnWrite({
      tenantId: 'acme',
      agent,
      masking: null,
      prior: null,
      conversationId: 'c1',
      userId: 'u1',
      context: null,
      message: 'goodbye',
      result: turn(agent),
      now: NOW,
      requestId: 'r1',
      reviewLowMargin: 0.1,
      reviewMaxPerConversation: 5,
      timing,
    });
    const prior = { ...first.write.conversation, status: 'active' as const, completedAt: null, auditHash: 'h0', eventSeq: 4 };
    const later = '2026-11-22T11:00:00.000Z';
    const { write } = buildTurnWrite({
      tenantId: 'acme',
      agent,
      masking: null,
      prior,
      conversationId: 'c1',
      userId: 'someone-else',
      context: null,
      message: 'goodbye',
      result: turn(agent),
      now: later,
      requestId: 'r2',
      reviewLowMargin: 0.1,
      reviewMaxPerConversation: 5,
      timing,
    });
    expect(write.isNew).toBe(false);
    expect(write.expectedAuditSeq).toBe(prior.auditSeq);
    expect(write.previousAuditHash).toBe('h0');
    expect(write.turns.map((t) => t.idx)).toEqual([2, 3]);
    expect(write.conversation).toMatchObject({ userId: 'u1', createdAt: NOW, updatedAt: later, turnCount: 4, eventSeq: 4 });
  });

  it("masks what people said in the state and context, and keeps the engine's own fields as they are, even past the detectors' budget", async () => {
    const agent = await agentOf();
    const result = turn(agent);
    result.flow.slots = { email: 'jane.doe@example.com', note: 'call +44 20 7946 0958' };
    const masking = compileMasking(agent, { mask: { email: 'redact', phone: 'redact', name: 'redact' } }, undefined);
    const base = {
      tenantId: 'acme',
      agent,
      masking,
      prior: null,
      conversationId: 'c1',
      userId: 'u1',
      context: { version: 'v1' as const, context: { identity: { user_name: 'Jane Doe' }, preferences: { language: 'es' } } },
      message: 'goodbye',
      result,
      now: NOW,
      requestId: 'r1',
      reviewLowMargin: 0.1,
      reviewMaxPerConversation: 5,
      timing,
    };
    const { write } = buildTurnWrite(base);
    expect(write.conversation.flow).toMatchObject({ wait: result.flow.wait, slots: { email: '[EMAIL]', note: 'call [PHONE]' } });
    expect(write.conversation.context).toEqual({ version: 'v1', context: { identity: { user_name: '[NAME]' }, preferences: { language: 'es' } } });
    // Spent before the write: the texts are kept unread, the flow still waits where it did, and the audit says so.
    const spent = buildTurnWrite({ ...base, maskBudget: { ms: 50, spentMs: 50, unread: 0 } });
    expect(spent.write.conversation.flow).toMatchObject({ wait: result.flow.wait, slots: { email: '[UNREAD: 20 characters]' } });
    expect(spent.write.conversation.context?.context?.preferences).toEqual({ language: 'es' });
    expect(spent.write.audit.find((a) => a.type === 'error')?.data).toMatchObject({ code: 'masking_budget_exceeded' });
  });
});
