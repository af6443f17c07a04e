// What a turn shows about the agent's routing, as messages for the review inbox (docs/improving.md):
// a message that fell to the fallback or out of scope, one routed with a small margin between the
// two best capabilities, one whose flow the user left for another capability or rephrased right
// after the reply, one escalated within a few turns of its routing, and a slot answer that failed
// validation until max_attempts. Pure: the turn's write carries what it finds (turn-write.ts), in
// the same transaction, so the inbox never reads the audit log.
import type { ReviewReason } from '@switchboard/contract';
import type { AuditDraft, FlowState, ReviewFinding, ReviewMark } from '../domain.js';
import type { CompiledAgent } from '../engine/compile.js';
import { sha256 } from '../lib/canonical.js';

/** How much of a message an occurrence keeps. */
const REVIEW_MESSAGE_CHARS = 1000;
/** An escalation this many user turns after a routing decision, or fewer, counts against it. */
const ESCALATION_TURNS = 3;
/** Word overlap (Jaccard) from which the next message is the same request said again. */
const REPHRASE_OVERLAP = 0.5;

/**
 * The text two messages share when they differ only in case, accents, punctuation, spacing and
 * the digits of numbers: "Where's order 123456?" and "where s order 654321" group together.
 */
export function normaliseMessage(message: string): string {
  return message
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/\p{N}+/gu, '#')
    .replace(/[^\p{L}#]+/gu, ' ')
    .trim();
}

export const groupKey = (reason: ReviewReason, message: string) => sha256(`${reason}\n${normaliseMessage(message)}`).slice(0, 40);

function words(message: string): Set<string> {
  return new Set(
    normaliseMessage(message)
      .split(' ')
      .filter((w) => w.length > 1),
  );
}

/** Whether `next` says `before` again: most of their words are the same. */
export function rephrases(before: string, next: string): boolean {
  const a = words(before);
  const b = words(next);
  if (a.size < 2 || b.size < 2) return false;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return shared / (a.size + b.size - shared) >= REPHRASE_OVERLAP;
}

interface RoutingData {
  strategy?: string;
  reason?: string;
  selected?: { capability?: string };
  candidates?: { capability: string; score: number; eligible: boolean }[];
}

export interface FindingsInput {
  agent: CompiledAgent;
  /** The conversation's flow before the turn (its `review` mark: the last routed message), null for a new one. */
  priorFlow: FlowState | null;
  /** The conversation's capability before the turn. */
  priorCapability: string | null;
  /** The audit sequence the conversation had before the turn: the turn's entries follow it. */
  priorAuditSeq: number;
  message: string;
  turnIndex: number;
  /** The turn's audit entries, as the engine wrote them. */
  audit: AuditDraft[];
  now: string;
  /** A routing whose two best capabilities are closer than this is a low_margin finding. */
  lowMargin: number;
}

/** The turn's findings, and the mark the conversation keeps for the next turns (null: none). */
export function reviewFindings(i: FindingsInput): { findings: ReviewFinding[]; mark: ReviewMark | null } {
  const { agent, audit } = i;
  const message = i.message.slice(0, REVIEW_MESSAGE_CHARS);
  const previous = i.priorFlow?.review ?? null;
  let mark: ReviewMark | null = previous;
  const findings: ReviewFinding[] = [];
  const find = (reason: ReviewReason, on: { turn: number; seq: number | null; message: string; capability: string }, detail: Record<string, unknown>) =>
    findings.push({
      reason,
      groupKey: groupKey(reason, on.message),
      turnIndex: on.turn,
      auditSequence: on.seq,
      message: on.message,
      capability: on.capability,
      version: agent.version,
      detail,
      at: i.now,
    });

  let switched = false;
  for (const [k, a] of audit.entries()) {
    if (a.type !== 'routing_decision') continue;
    const d = a.data as RoutingData;
    const selected = d.selected?.capability ?? agent.fallback.name;
    const seq = i.priorAuditSeq + k + 1;
    const here = { turn: i.turnIndex, seq, message, capability: selected };
    if (d.reason === 'switch') {
      switched = true;
      if (previous) find('switched', previous, { from: previous.capability, to: selected, switch_message: message });
    } else if (selected === agent.fallback.name && d.reason !== 'not_entitled') {
      const best = d.candidates?.[0];
      find(d.reason === 'out_of_scope' ? 'out_of_scope' : 'fallback', here, {
        routing_reason: d.reason ?? null,
        ...(best ? { best: { capability: best.capability, score: best.score } } : {}),
      });
    } else if (d.strategy === 'classifier' && d.candidates && d.candidates.length > 1) {
      const [first, second] = d.candidates;
      const margin = Math.round((first.score - second.score) * 10_000) / 10_000;
      if (margin < i.lowMargin) find('low_margin', here, { margin, second: { capability: second.capability, score: second.score } });
    }
    mark = { turn: i.turnIndex, seq, capability: selected, message, version: agent.version };
  }

  // The previous message, routed to a capability, said again right after the reply.
  if (!switched && previous && previous.turn === i.turnIndex - 2 && previous.capability !== agent.fallback.name && rephrases(previous.message, message)) {
    find('rephrased', previous, { next_message: message });
  }

  const maxAttempts = audit.find((a) => a.type === 'error' && (a.data as { code?: string }).code === 'max_attempts');
  if (maxAttempts) {
    find(
      'slot_failed',
      { turn: i.turnIndex, seq: null, message, capability: i.priorCapability ?? agent.fallback.name },
      { error: (maxAttempts.data as { message?: string }).message ?? null },
    );
  }

  const escalation = audit.find((a) => a.type === 'status_change' && (a.data as { to?: string }).to === 'escalated');
  if (escalation && mark && !maxAttempts) {
    const why = (escalation.data as { reason?: string }).reason ?? null;
    const after = (i.turnIndex - mark.turn) / 2;
    // A flow that ends escalated in the very turn that routed to it is a hand-off by design (talk to a person).
    const designed = after === 0 && why === 'flow_end';
    if (!designed && after <= ESCALATION_TURNS) find('escalated', mark, { escalation_reason: why, turns_after: after });
  }
  // After an escalation, the conversation is a person's: nothing later counts against the routing.
  return { findings, mark: escalation ? null : mark };
}
