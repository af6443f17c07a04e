// What a turn shows for the review inbox, from the engine's audit entries alone (no database):
// each reason, the near-identical grouping, the mark kept for later turns, and what is no finding.
// Also routing.out_of_scope: the messages reviewers add there stop routing to a capability.
import { describe, expect, it } from 'vitest';
import type { AuditDraft, FlowState, ReviewMark } from '../../server/src/domain.js';
import { compileAgent, type CompiledAgent } from '../../server/src/engine/compile.js';
import { route } from '../../server/src/engine/routing.js';
import { groupKey, normaliseMessage, rephrases, reviewFindings } from '../../server/src/service/review/review-findings.js';
import { parseDefinition } from '../helpers/agents.js';

const NOW = '2026-11-26T10:00:00.000Z';
const definition = {
  name: 'Shop',
  capabilities: [
    { name: 'orders', examples: ['where is my order', 'track my order', 'order status', 'has my order shipped'], phases: [{ id: 'a', say: 'Number?' }] },
    {
      name: 'billing',
      examples: ['billing question', 'my invoice', 'I was charged twice', 'refund please', 'update my card'],
      phases: [{ id: 'b', say: 'Topic?' }],
    },
  ],
};
let agent: CompiledAgent;

const routing = (data: Record<string, unknown>): AuditDraft => ({ type: 'routing_decision', turnIndex: 0, timestamp: NOW, durationMs: 1, data });
const decided = (capability: string, reason: string, scores: [string, number][], strategy = 'classifier') =>
  routing({ strategy, reason, selected: { capability }, candidates: scores.map(([c, score]) => ({ capability: c, score, eligible: true })) });
const escalation = (reason: string): AuditDraft => ({
  type: 'status_change',
  turnIndex: 0,
  timestamp: NOW,
  durationMs: null,
  data: { from: 'active', to: 'escalated', reason },
});
const flow = (review?: ReviewMark): FlowState => ({ slots: {}, actions: {}, attempts: 0, wait: 'open', ...(review ? { review } : {}) });
const find = (o: { message: string; audit: AuditDraft[]; turnIndex?: number; prior?: ReviewMark; capability?: string }) =>
  reviewFindings({
    agent,
    priorFlow: o.prior || o.turnIndex ? flow(o.prior) : null,
    priorCapability: o.capability ?? null,
    priorAuditSeq: 10,
    message: o.message,
    turnIndex: o.turnIndex ?? 0,
    audit: o.audit,
    now: NOW,
    lowMargin: 0.1,
  });
const mark = (over: Partial<ReviewMark> = {}): ReviewMark => ({ turn: 0, seq: 3, capability: 'orders', message: 'where is my order', version: 1, ...over });

describe('review findings of a turn', () => {
  it('compiles the agent', async () => {
    agent = await compileAgent('00000000-0000-4000-8000-000000000001', 1, parseDefinition(definition));
  });

  it('finds a fallback, an out-of-scope message and a small margin, pointing at the routing decision', () => {
    const fell = find({ message: 'what is the weather', audit: [decided('fallback', 'below_threshold', [['orders', 0.3]], 'fallback')] });
    expect(fell.findings).toMatchObject([
      { reason: 'fallback', auditSequence: 11, capability: 'fallback', detail: { routing_reason: 'below_threshold', best: { capability: 'orders' } } },
    ]);
    expect(find({ message: 'x y', audit: [decided('fallback', 'out_of_scope', [['fallback', 0.9]])] }).findings[0].reason).toBe('out_of_scope');
    const close = find({
      message: 'order invoice',
      audit: [
        decided('orders', 'best_match', [
          ['orders', 0.52],
          ['billing', 0.45],
        ]),
      ],
    });
    expect(close.findings).toMatchObject([{ reason: 'low_margin', capability: 'orders', detail: { margin: 0.07, second: { capability: 'billing' } } }]);
    expect(close.mark).toMatchObject({ turn: 0, seq: 11, capability: 'orders', message: 'order invoice' });
    // A clear decision, and a capability the user is not entitled to, are no findings.
    expect(
      find({
        message: 'track my order',
        audit: [
          decided('orders', 'best_match', [
            ['orders', 0.9],
            ['billing', 0.05],
          ]),
        ],
      }).findings,
    ).toEqual([]);
    expect(find({ message: 'gold line', audit: [decided('fallback', 'not_entitled', [['orders', 0.9]], 'fallback')] }).findings).toEqual([]);
  });

  it('finds the routed message when the user leaves its flow, or says it again right after the reply', () => {
    const left = find({
      message: 'actually, refund please',
      turnIndex: 2,
      prior: mark(),
      audit: [routing({ strategy: 'classifier', reason: 'switch', selected: { capability: 'billing' }, candidates: [] })],
    });
    expect(left.findings).toMatchObject([
      { reason: 'switched', turnIndex: 0, auditSequence: 3, message: 'where is my order', detail: { from: 'orders', to: 'billing' } },
    ]);
    expect(left.mark).toMatchObject({ turn: 2, capability: 'billing' });
    const again = find({ message: 'where is my order please??', turnIndex: 2, prior: mark(), audit: [] });
    expect(again.findings).toMatchObject([{ reason: 'rephrased', message: 'where is my order', detail: { next_message: 'where is my order please??' } }]);
    // An answer to the question is no rephrasing, nor is a message two turns later.
    expect(find({ message: '100001', turnIndex: 2, prior: mark(), audit: [] }).findings).toEqual([]);
    expect(find({ message: 'where is my order', turnIndex: 4, prior: mark(), audit: [] }).findings).toEqual([]);
  });

  it('finds an escalation within three turns of the routing, but not a hand-off asked for', () => {
    const soon = find({ message: '999999', turnIndex: 2, prior: mark(), audit: [escalation('flow_end')] });
    expect(soon.findings).toMatchObject([{ reason: 'escalated', message: 'where is my order', detail: { turns_after: 1, escalation_reason: 'flow_end' } }]);
    expect(soon.mark).toBeNull();
    expect(find({ message: 'x', turnIndex: 8, prior: mark(), audit: [escalation('action_failed')] }).findings).toEqual([]);
    const handoff = find({ message: 'talk to a human', audit: [decided('orders', 'best_match', [['orders', 0.9]]), escalation('flow_end')] });
    expect(handoff.findings).toEqual([]);
    const failed = find({ message: 'lookup', audit: [decided('orders', 'best_match', [['orders', 0.9]]), escalation('action_failed')] });
    expect(failed.findings.map((f) => f.reason)).toEqual(['escalated']);
  });

  it('finds the slot answer that spent max_attempts, and not the escalation it causes', () => {
    const r = find({
      message: 'no idea',
      turnIndex: 6,
      prior: mark(),
      capability: 'orders',
      audit: [
        {
          type: 'error',
          turnIndex: 6,
          timestamp: NOW,
          durationMs: null,
          data: { code: 'max_attempts', message: 'slot "order_id" not filled after 3 attempts' },
        },
        escalation('max_attempts'),
      ],
    });
    expect(r.findings).toMatchObject([{ reason: 'slot_failed', message: 'no idea', capability: 'orders', auditSequence: null, turnIndex: 6 }]);
  });

  it("finds a question an answer phase found nothing for in the agent's sources, and nothing for one it answered or a generative search", () => {
    const search = (data: Record<string, unknown>): AuditDraft => ({ type: 'knowledge_search', turnIndex: 2, timestamp: NOW, durationMs: 3, data });
    const unanswered = search({
      capability: 'billing',
      mode: 'answer',
      answered: false,
      sources: ['help'],
      min_confidence: 0.7,
      passages: [{ id: 'help#2', confidence: 0.31 }],
    });
    const r = find({ message: 'do gift cards expire?', turnIndex: 2, capability: 'billing', audit: [unanswered] });
    expect(r.findings).toMatchObject([
      {
        reason: 'unanswered',
        capability: 'billing',
        turnIndex: 2,
        auditSequence: null,
        detail: { sources: ['help'], best_confidence: 0.31, min_confidence: 0.7 },
      },
    ]);
    const failed = find({ message: 'x y', audit: [search({ mode: 'answer', answered: false, sources: [], passages: [], error: 'index down' })] });
    expect(failed.findings[0].detail).toEqual({ sources: [], best_confidence: null, min_confidence: null, error: 'index down' });
    expect(find({ message: 'a b', audit: [search({ mode: 'answer', answered: true, passages: [{ confidence: 0.9 }] })] }).findings).toEqual([]);
    expect(find({ message: 'a b', audit: [search({ mode: 'generate', passages: [] })] }).findings).toEqual([]);
  });

  it('groups near-identical messages: case, accents, punctuation and digits aside', () => {
    expect(normaliseMessage("Where's Order 123456?!")).toBe('where s order #');
    expect(groupKey('fallback', 'Où est ma commande 12?')).toBe(groupKey('fallback', 'ou est ma commande 99'));
    expect(groupKey('fallback', 'hello')).not.toBe(groupKey('low_margin', 'hello'));
    expect(rephrases('where is my order', 'where is my order please')).toBe(true);
    expect(rephrases('where is my order', 'order')).toBe(false);
    expect(find({ message: 'x'.repeat(5000), audit: [decided('fallback', 'below_threshold', [], 'fallback')] }).findings[0].message).toHaveLength(1000);
  });
});

describe('routing.out_of_scope', () => {
  const message = 'update my card collection';
  const routed = async (def: Parameters<typeof parseDefinition>[0]) => {
    const a = await compileAgent('00000000-0000-4000-8000-000000000002', 1, parseDefinition(def));
    return route(a, a.router.score(message), null).capability.name;
  };

  it('turns messages reviewers added away from the capabilities, beside the everyday class or as the fallback capability', async () => {
    expect(await routed(definition)).toBe('billing');
    expect(await routed({ ...definition, routing: { out_of_scope: [message] } })).toBe('fallback');
    const withFallback = {
      ...definition,
      routing: { fallback: 'other', out_of_scope: [message] },
      capabilities: [
        ...definition.capabilities,
        { name: 'other', examples: ['tell me a joke', 'what time is it', 'who are you'], phases: [{ id: 'o', say: 'Sorry.' }] },
      ],
    };
    expect(await routed(withFallback)).toBe('other');
  });
});
