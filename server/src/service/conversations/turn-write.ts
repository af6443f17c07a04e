// What one converse call writes, built from the engine's result: the conversation's new state,
// both turns, the audit entries (ending with turn_timing, which chains the turns' hashes), the
// events, the webhook deliveries and the idempotency record. Pure: no I/O, no clock.
import type { ContextEnvelope, ConverseResponse } from '@switchboard/contract';
import type { Channel, Conversation, EventDraft, TurnRow } from '../../domain.js';
import type { CompiledAgent } from '../../engine/compile.js';
import type { TurnResult } from '../../engine/run.js';
import { turnHash, stateHash } from '../../lib/audit-chain.js';
import type { TurnWrite } from '../../store/conversations/conversation-store.js';
import { cappedDelta, closeDeltas, knowledgeDeltas, statDeltas } from '../agents/agent-stats.js';
import { inactiveAfter, turnEvent, webhooksFor } from './lifecycle.js';
import { reviewFindings } from '../review/review-findings.js';
import { maskedContext, maskedFlow, maskerOf, sensitiveFilled, slotPlaceholder, type Masking } from '../privacy/policy.js';
import type { MaskBudget } from '../privacy/mask.js';

interface TurnTiming {
  total_ms: number;
  routing_ms: number;
  engine_ms: number;
  actions_ms: number;
  storage_ms: number;
}

export interface TurnWriteInput {
  tenantId: string;
  agent: CompiledAgent;
  /** What the agent masks under its tenant's privacy policy (PrivacyService.masking); null: nothing. */
  masking: Masking | null;
  /** What the turn's detectors may spend, shared with its model calls (MaskBudget); unbounded when absent. */
  maskBudget?: MaskBudget;
  /** The conversation before the call; null for a new one. */
  prior: Conversation | null;
  conversationId: string;
  userId: string | null;
  context: ContextEnvelope | null;
  message: string;
  result: TurnResult;
  now: string;
  requestId: string;
  timing: TurnTiming;
  idempotency?: { key: string; hash: string };
  /** Where a new conversation comes from (the web chat widget); null or absent: the API. */
  channel?: Channel | null;
  /** A routing whose two best capabilities are closer than this is a review-inbox finding (REVIEW_LOW_MARGIN). */
  reviewLowMargin: number;
  /** Findings one conversation adds to the review inbox at most (REVIEW_MAX_PER_CONVERSATION); the rest are counted as `capped_conv`. */
  reviewMaxPerConversation: number;
}

export function buildTurnWrite(i: TurnWriteInput): { write: TurnWrite; response: ConverseResponse } {
  const { agent, prior, now, conversationId } = i;
  // With a privacy policy, what is kept is masked (docs/privacy.md): the turns, the audit, the
  // state and context, the inbox and the idempotency record. The turn itself ran on the real
  // values; the live response keeps them, for the one who typed them.
  const said = maskerOf(i.masking, { budget: i.maskBudget });
  const kept = maskerOf(i.masking, { budget: i.maskBudget });
  // A sensitive slot's answer: the message that filled it is kept as its placeholder, and its value wherever it appears.
  const filled = sensitiveFilled(i.masking, prior?.flow.slots ?? {}, i.result.flow.slots);
  for (const f of filled) for (const m of [said, kept]) m?.literal(f.value, slotPlaceholder(f.slot));
  if (said && filled.length) said.counts.sensitive = filled.length;
  const message = filled.length ? filled.map((f) => slotPlaceholder(f.slot)).join(' ') : said ? said.text(i.message) : i.message;
  const reply = said ? said.text(i.result.reply) : i.result.reply;
  const result = kept
    ? {
        ...i.result,
        audit: i.result.audit.map((a) => ({ ...a, data: kept.json(a.data) })),
        flow: maskedFlow(kept, i.result.flow),
        options: kept.json(i.result.options),
      }
    : i.result;
  // Past the detectors' budget a text is kept (or sent to the model) unread, and the turn says so: nothing goes unmasked.
  const unread = i.maskBudget?.unread ?? 0;
  if (unread) {
    result.audit.push({
      type: 'error',
      turnIndex: prior ? prior.turnCount : 0,
      timestamp: now,
      durationMs: null,
      data: {
        code: 'masking_budget_exceeded',
        message: `${unread} text(s) kept or sent to a model as [UNREAD]: too long for the privacy detectors, or past their ${i.maskBudget?.ms ?? 0} ms a turn`,
      },
    });
  }
  const turnIndex = prior ? prior.turnCount : 0;
  const review = reviewFindings({
    agent,
    priorFlow: prior?.flow ?? null,
    priorCapability: prior?.capability ?? null,
    priorAuditSeq: prior?.auditSeq ?? 0,
    message,
    turnIndex,
    audit: result.audit,
    now,
    lowMargin: i.reviewLowMargin,
  });
  const flow = { ...result.flow };
  if (review.mark) flow.review = review.mark;
  else delete flow.review;
  // One conversation buries no reviewer: past its cap its findings are counted, not kept.
  const added = prior?.flow.reviewCount ?? 0;
  const findings = review.findings.slice(0, Math.max(0, i.reviewMaxPerConversation - added));
  const cappedHere = review.findings.length - findings.length;
  if (added + findings.length > 0) flow.reviewCount = added + findings.length;
  else delete flow.reviewCount;
  const conversation: Conversation = {
    id: conversationId,
    tenantId: i.tenantId,
    agentId: agent.agentId,
    agentVersion: agent.version,
    userId: prior ? prior.userId : i.userId,
    status: result.status,
    outcome: result.outcome,
    capability: result.capability.name,
    capabilityId: result.capability.id,
    phase: result.phase,
    awaitingInput: result.awaitingInput,
    flow,
    context: kept && i.context ? maskedContext(kept, i.context) : i.context,
    turnCount: turnIndex + 2,
    auditSeq: (prior?.auditSeq ?? 0) + result.audit.length + 1,
    createdAt: prior?.createdAt ?? now,
    updatedAt: now,
    completedAt: prior?.completedAt ?? (result.status === 'completed' || result.status === 'abandoned' ? now : null),
    lastUserTurnAt: now,
    inactiveAfter: inactiveAfter(agent, result.status, now),
    erasedAt: null,
    auditHash: prior?.auditHash ?? null, // the store chains this call's entries onto it
    eventSeq: prior?.eventSeq ?? 0, // the store numbers this call's event row after it
    channel: prior ? prior.channel : (i.channel ?? null),
  };
  const response: ConverseResponse = {
    conversation_id: conversationId,
    response: {
      message: i.result.reply,
      phase: result.phase,
      awaiting_input: result.awaitingInput,
      options: i.result.options,
      ...(result.citations.length ? { citations: result.citations } : {}),
    },
    state: { status: result.status, capability: result.capability.name },
  };
  const turns: TurnRow[] = [
    { idx: turnIndex, role: 'user', message, timestamp: now },
    {
      idx: turnIndex + 1,
      role: 'agent',
      message: reply,
      timestamp: now,
      phase: result.phase,
      options: result.options,
      ...(result.citations.length ? { citations: result.citations } : {}),
    },
  ];
  const audit = [
    ...result.audit,
    {
      type: 'turn_timing' as const,
      turnIndex,
      timestamp: now,
      durationMs: i.timing.total_ms,
      data: {
        ...i.timing,
        turns: turns.map((t) => ({ index: t.idx, hash: turnHash(conversationId, t) })),
        state: stateHash(conversation),
        // Which detectors masked what the user and the agent said (types and counts, never values).
        // and how many texts of the turn were kept unread.
        ...(said?.masked || unread ? { masked: { ...said?.counts, ...(unread ? { unread } : {}) } } : {}),
      },
    },
  ];
  const events: EventDraft[] = turns.map(turnEvent);
  if (!prior || prior.phase !== result.phase || prior.capability !== result.capability.name) {
    events.push({ type: 'phase.changed', data: { capability: result.capability.name, from: prior?.phase ?? null, to: result.phase }, createdAt: now });
  }
  for (const a of audit) if (a.type === 'status_change') events.push({ type: 'status.changed', data: a.data, createdAt: now });
  const statusIdx = audit.findLastIndex((a) => a.type === 'status_change');
  return {
    response,
    write: {
      conversation,
      isNew: prior === null,
      expectedAuditSeq: prior?.auditSeq ?? 0,
      previousAuditHash: prior?.auditHash ?? null,
      stored: prior ?? undefined,
      turns,
      events,
      webhooks: statusIdx >= 0 ? webhooksFor(agent, conversation, { from: prior?.status ?? null, seq: (prior?.auditSeq ?? 0) + statusIdx + 1, now }) : [],
      audit,
      stats: statDeltas({ conversation, isNew: prior === null, audit }, agent.fallback.name),
      closes: [
        ...closeDeltas({ conversation, audit, isNew: prior === null }),
        ...(cappedHere ? [cappedDelta('capped_conv', now, conversation.agentVersion, cappedHere)] : []),
      ],
      knowledge: knowledgeDeltas({ conversation, audit, citations: result.citations, at: now }),
      review: findings,
      requestId: i.requestId,
      idempotency: i.idempotency
        ? { agentId: agent.agentId, key: i.idempotency.key, requestHash: i.idempotency.hash, response: kept ? kept.json(response) : response }
        : undefined,
    },
  };
}
