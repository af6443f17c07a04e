// An answer phase (docs/knowledge.md): the agent's knowledge sources are searched for the message
// (a `retrieve` the caller makes) and, when the best passage holds enough of the question, the
// reply quotes its matching sentences with the source's title, page and link, and cites it.
// Otherwise the phase's `not_found` decides: a person, the fallback message, or another phase.
import { citationName, type Citation } from '@switchboard/contract';
import { matchingSentences, type Found } from '../knowledge.js';
import type { CompiledPhase } from '../compile.js';
import { CONTINUE, type EngineReply, type EngineRequest, type StepOutcome, type TurnState } from '../turn.js';

/** Passages searched for, beyond those an answer may quote (the audit shows the runners-up). */
const SEARCHED = 3;

function citation(f: Found, message: string): Citation {
  const p = f.passage;
  return {
    source: p.source?.name ?? p.id.split('#')[0],
    title: p.source?.title ?? null,
    url: p.source?.url ?? null,
    page: p.source?.page ?? null,
    heading: p.title,
    passage_id: p.id,
    snippet: matchingSentences(p.text, message),
  };
}

/** The line under an answer that says where it came from. */
function sourceLine(cites: Citation[]): string {
  const named = cites.map(citationName);
  const links = [...new Set(cites.flatMap((c) => (c.url ? [c.url] : [])))];
  return `Source: ${[...new Set(named)].join('; ')}${links.length ? ` (${links.join(' ')})` : ''}`;
}

export function* answer(t: TurnState, p: CompiledPhase): Generator<EngineRequest, StepOutcome, EngineReply> {
  if (!p.answer) return CONTINUE;
  const a = p.answer;
  const message = t.input.message;
  const reply = yield { kind: 'retrieve', query: message, k: Math.max(a.passages, SEARCHED) };
  if (!('retrieved' in reply)) throw new Error('a retrieve was answered with something else');
  const used = reply.error === undefined ? reply.retrieved.slice(0, a.passages).filter((f) => f.confidence >= a.minConfidence) : [];
  t.note(
    'knowledge_search',
    {
      capability: t.capability.name,
      phase: p.id,
      mode: 'answer',
      sources: reply.sources,
      // The knowledge snapshot the version pins (none: the sources as they are now).
      ...(t.agent.knowledgeSnapshot !== null ? { snapshot: t.agent.knowledgeSnapshot } : {}),
      min_confidence: a.minConfidence,
      answered: used.length > 0,
      passages: reply.retrieved.map((f) => ({ id: f.passage.id, score: f.score, confidence: f.confidence })),
      ...(reply.error !== undefined ? { error: reply.error } : {}),
    },
    reply.durationMs,
  );
  if (used.length === 0) {
    if (a.notFound === 'escalate') return t.stop(t.escalate('knowledge_not_found'));
    if (a.notFound === 'fallback') {
      t.say(t.text(t.agent.messages.fallback));
      t.flow.wait = 'open';
      return t.stop(t.result(true));
    }
    return { kind: 'goto', idx: t.capability.phaseIndex.get(a.notFound)! };
  }
  const cites = used.map((f) => citation(f, message));
  t.say([...cites.map((c) => c.snippet), sourceLine(cites)].join('\n\n'));
  t.citations.push(...cites);
  return CONTINUE;
}
