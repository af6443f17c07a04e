// What a turn shows about the agent's routing, as messages for the review inbox (docs/improving.md):
// a message that fell to the fallback or out of scope, one routed with a small margin between the
// two best capabilities, one whose flow the user left for another capability or rephrased right
// after the reply, one escalated within a few turns of its routing, a slot answer that failed
// validation until max_attempts, and a question an answer phase found nothing for in its
// knowledge sources. Pure: the turn's write carries what it finds (turn-write.ts), in
// the same transaction, so the inbox never reads the audit log.
import type { ReviewReason } from '@switchboard/contract';
import type { AuditDraft, FlowState, ReviewFinding, ReviewMark } from '../../domain.js';
import type { CompiledAgent } from '../../engine/compile.js';
import { sha256 } from '../../lib/canonical.js';

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

/** A message a finding is about: the turn it was said in, its routing's audit entry, its capability. */
interface On {
  turn: number;
  seq: number | null;
  message: string;
  capability: string;
}

/** What a turn shows, read once from its audit entries; every reason's detector reads this. */
interface TurnFacts {
  input: FindingsInput;
  /** The message as occurrences keep it. */
  message: string;
  /** The last routed message before this turn (the conversation's mark), if any. */
  previous: ReviewMark | null;
  /** This turn's routing decisions, in order. */
  routings: { data: RoutingData; on: On }[];
  /** Whether one of them left a flow for another capability. */
  switched: boolean;
  /** The last routed message after this turn. */
  mark: ReviewMark | null;
  maxAttempts: AuditDraft | undefined;
  escalation: AuditDraft | undefined;
  /** The turn's answer-phase searches that found nothing to answer with. */
  unanswered: KnowledgeSearchData[];
}

interface KnowledgeSearchData {
  mode?: string;
  answered?: boolean;
  capability?: string;
  sources?: string[];
  min_confidence?: number;
  passages?: { confidence?: number }[];
  error?: string;
}

type Found = { on: On; detail: Record<string, unknown> };

/** A routing to the fallback that is not a refusal for want of an entitlement, nor a switch. */
const toFallback = (f: TurnFacts, r: TurnFacts['routings'][number]) =>
  r.data.reason !== 'switch' && r.on.capability === f.input.agent.fallback.name && r.data.reason !== 'not_entitled';
const best = (d: RoutingData) => d.candidates?.[0];
const fellBack = (r: TurnFacts['routings'][number]): Found => ({
  on: r.on,
  detail: { routing_reason: r.data.reason ?? null, ...(best(r.data) ? { best: { capability: best(r.data)!.capability, score: best(r.data)!.score } } : {}) },
});

/**
 * Every reason a message lands in the inbox, each with what finds it. The compiler asks for an
 * entry for each reason the contract names (ReviewReason); the console's labels are a Record too.
 */
const DETECTORS: Record<ReviewReason, (f: TurnFacts) => Found[]> = {
  fallback: (f) => f.routings.filter((r) => toFallback(f, r) && r.data.reason !== 'out_of_scope').map(fellBack),
  out_of_scope: (f) => f.routings.filter((r) => toFallback(f, r) && r.data.reason === 'out_of_scope').map(fellBack),
  low_margin: (f) =>
    f.routings.flatMap((r) => {
      const d = r.data;
      if (d.reason === 'switch' || toFallback(f, r) || d.strategy !== 'classifier' || !d.candidates || d.candidates.length < 2) return [];
      const [first, second] = d.candidates;
      const margin = Math.round((first.score - second.score) * 10_000) / 10_000;
      return margin < f.input.lowMargin ? [{ on: r.on, detail: { margin, second: { capability: second.capability, score: second.score } } }] : [];
    }),
  switched: (f) =>
    f.previous
      ? f.routings
          .filter((r) => r.data.reason === 'switch')
          .map((r) => ({ on: f.previous!, detail: { from: f.previous!.capability, to: r.on.capability, switch_message: f.message } }))
      : [],
  // The previous message, routed to a capability, said again right after the reply.
  rephrased: (f) =>
    !f.switched &&
    f.previous &&
    f.previous.turn === f.input.turnIndex - 2 &&
    f.previous.capability !== f.input.agent.fallback.name &&
    rephrases(f.previous.message, f.message)
      ? [{ on: f.previous, detail: { next_message: f.message } }]
      : [],
  slot_failed: (f) =>
    f.maxAttempts
      ? [
          {
            on: { turn: f.input.turnIndex, seq: null, message: f.message, capability: f.input.priorCapability ?? f.input.agent.fallback.name },
            detail: { error: (f.maxAttempts.data as { message?: string }).message ?? null },
          },
        ]
      : [],
  unanswered: (f) =>
    f.unanswered.map((s) => ({
      on: { turn: f.input.turnIndex, seq: null, message: f.message, capability: s.capability ?? f.input.priorCapability ?? f.input.agent.fallback.name },
      detail: {
        sources: s.sources ?? [],
        best_confidence: s.passages?.[0]?.confidence ?? null,
        min_confidence: s.min_confidence ?? null,
        ...(s.error !== undefined ? { error: s.error } : {}),
      },
    })),
  escalated: (f) => {
    if (!f.escalation || !f.mark || f.maxAttempts) return [];
    const why = (f.escalation.data as { reason?: string }).reason ?? null;
    const after = (f.input.turnIndex - f.mark.turn) / 2;
    // A flow that ends escalated in the very turn that routed to it is a hand-off by design (talk to a person).
    const designed = after === 0 && why === 'flow_end';
    return !designed && after <= ESCALATION_TURNS ? [{ on: f.mark, detail: { escalation_reason: why, turns_after: after } }] : [];
  },
};

/** The turn's findings, and the mark the conversation keeps for the next turns (null: none). */
export function reviewFindings(i: FindingsInput): { findings: ReviewFinding[]; mark: ReviewMark | null } {
  const { agent, audit } = i;
  const message = i.message.slice(0, REVIEW_MESSAGE_CHARS);
  const previous = i.priorFlow?.review ?? null;
  const routings = [...audit.entries()]
    .filter(([, a]) => a.type === 'routing_decision')
    .map(([k, a]) => {
      const data = a.data as RoutingData;
      return { data, on: { turn: i.turnIndex, seq: i.priorAuditSeq + k + 1, message, capability: data.selected?.capability ?? agent.fallback.name } };
    });
  const last = routings.at(-1);
  const facts: TurnFacts = {
    input: i,
    message,
    previous,
    routings,
    switched: routings.some((r) => r.data.reason === 'switch'),
    mark: last ? { turn: last.on.turn, seq: last.on.seq, capability: last.on.capability, message, version: agent.version } : previous,
    maxAttempts: audit.find((a) => a.type === 'error' && (a.data as { code?: string }).code === 'max_attempts'),
    escalation: audit.find((a) => a.type === 'status_change' && (a.data as { to?: string }).to === 'escalated'),
    unanswered: audit
      .filter((a) => a.type === 'knowledge_search')
      .map((a) => a.data as KnowledgeSearchData)
      .filter((d) => d.mode === 'answer' && d.answered === false),
  };
  const findings = (Object.entries(DETECTORS) as [ReviewReason, (f: TurnFacts) => Found[]][]).flatMap(([reason, detect]) =>
    detect(facts).map(({ on, detail }): ReviewFinding => ({
      reason,
      groupKey: groupKey(reason, on.message),
      turnIndex: on.turn,
      auditSequence: on.seq,
      message: on.message,
      capability: on.capability,
      version: agent.version,
      detail,
      at: i.now,
    })),
  );
  // After an escalation, the conversation is a person's: nothing later counts against the routing.
  return { findings, mark: facts.escalation ? null : facts.mark };
}
