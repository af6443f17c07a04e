// An agent's hourly counters (table agent_stats), as the deltas one write adds: conversations
// started (under the capability their first message went to), closed as completed, escalated or
// abandoned (under the capability and outcome they closed with), and routing decisions, those
// that went to the fallback apart. The analytics API sums these rows instead of reading every
// conversation and audit entry of a window. Pure: the writers add the deltas in the write's own
// transaction, so the counters are exact (test/http/analytics.test.ts recounts them). Every row
// is kept per agent version, so that a split's candidate and the current version compare.
import { CHANNEL_PREFIX, type AuditDraft, type CHANNEL_MEASURES, type CloseDelta, Conversation, type KnowledgeDelta, StatCounter, StatDelta } from '../../domain.js';
import { secondsBucket } from '../../lib/seconds-bucket.js';

const CLOSING = new Set(['completed', 'escalated', 'abandoned']);

const hourOf = (timestamp: string) => timestamp.slice(0, 13);

/**
 * What a write adds to its agent's counters. `fallback` is the name of the agent's fallback
 * capability; `isNew` says the write starts the conversation. Deltas are merged per key and
 * sorted, so that concurrent writes lock the same rows in the same order.
 */
export function statDeltas(w: { conversation: Conversation; isNew: boolean; audit: AuditDraft[] }, fallback: string): StatDelta[] {
  const c = w.conversation;
  const byKey = new Map<string, StatDelta>();
  const add = (timestamp: string, capability: string, outcome: string, counter: StatCounter) => {
    const hour = hourOf(timestamp);
    const key = JSON.stringify([hour, capability, outcome]);
    let d = byKey.get(key);
    if (!d)
      byKey.set(
        key,
        (d = { hour, version: c.agentVersion, capability, outcome, started: 0, completed: 0, escalated: 0, abandoned: 0, routed: 0, fallback: 0 }),
      );
    d[counter]++;
  };
  if (w.isNew) add(c.createdAt, c.capability, '', 'started');
  for (const a of w.audit) {
    if (a.type === 'routing_decision') {
      const selected = (a.data as { selected?: { capability?: string } }).selected?.capability ?? c.capability;
      add(a.timestamp, selected, '', 'routed');
      if (selected === fallback) add(a.timestamp, selected, '', 'fallback');
    } else if (a.type === 'status_change') {
      const { to, outcome } = a.data as { to: string; outcome: string | null };
      if (CLOSING.has(to)) add(a.timestamp, c.capability, outcome ?? '', to as 'completed' | 'escalated' | 'abandoned');
    }
  }
  return [...byKey.values()].sort((a, b) => (a.hour + a.capability + '\0' + a.outcome < b.hour + b.capability + '\0' + b.outcome ? -1 : 1));
}

/** A conversation that a write closes (completed or abandoned): its turns and duration, in its close hour. */
export function closeDeltas(w: { conversation: Conversation; audit: AuditDraft[]; isNew?: boolean }): CloseDelta[] {
  const closing = w.audit.findLast(
    (a) => a.type === 'status_change' && ((a.data as { to: string }).to === 'completed' || (a.data as { to: string }).to === 'abandoned'),
  );
  const c = w.conversation;
  const out = channelDeltas(w);
  if (!closing || !c.completedAt) return out;
  const hour = hourOf(c.completedAt);
  const seconds = (Date.parse(c.completedAt) - Date.parse(c.createdAt)) / 1000;
  const version = c.agentVersion;
  return [{ hour, version, measure: 'turns', value: c.turnCount, n: 1 }, { hour, version, measure: 'seconds', value: secondsBucket(seconds), n: 1 }, ...out];
}

/**
 * Conversations of the web chat widget and of each messaging channel started and closed, as rows
 * of agent_closes (measure `<channel prefix>_<counter>`, value 0), so that analytics split by
 * channel from the same hourly table, exact and written in the same transaction; the API's are
 * the totals less these.
 */
function channelDeltas(w: { conversation: Conversation; audit: AuditDraft[]; isNew?: boolean }): CloseDelta[] {
  const c = w.conversation;
  if (!c.channel) return [];
  const prefix = CHANNEL_PREFIX[c.channel.kind];
  const byKey = new Map<string, CloseDelta>();
  const add = (timestamp: string, counter: (typeof CHANNEL_MEASURES)[number]) => {
    const hour = hourOf(timestamp);
    const measure = `${prefix}_${counter}` as const;
    const d = byKey.get(`${hour} ${measure}`) ?? { hour, version: c.agentVersion, measure, value: 0, n: 0 };
    d.n++;
    byKey.set(`${hour} ${measure}`, d);
  };
  if (w.isNew) add(c.createdAt, 'started');
  for (const a of w.audit) {
    if (a.type !== 'status_change') continue;
    const { to } = a.data as { to: string };
    if (to === 'completed' || to === 'escalated' || to === 'abandoned') add(a.timestamp, to);
  }
  return [...byKey.values()].sort((a, b) => (a.hour + a.measure < b.hour + b.measure ? -1 : 1));
}

/**
 * What a turn adds to its agent's knowledge counters (table knowledge_stats), in the turn's hour:
 * `cited` under each source the reply cites (once a turn), and `unanswered` under source '' for
 * each answer-phase search that found nothing good enough, so analytics say which sources answer
 * most and how often the documents did not say.
 */
export function knowledgeDeltas(w: { conversation: Conversation; audit: AuditDraft[]; citations: readonly { source: string }[]; at: string }): KnowledgeDelta[] {
  const hour = hourOf(w.at);
  const version = w.conversation.agentVersion;
  const out = [...new Set(w.citations.map((c) => c.source))].sort().map((source) => ({ hour, version, source, cited: 1, unanswered: 0 }));
  const unanswered = w.audit.filter((a) => a.type === 'knowledge_search' && (a.data as { mode?: string; answered?: boolean }).answered === false).length;
  if (unanswered) out.unshift({ hour, version, source: '', cited: 0, unanswered });
  return out;
}

/** Review findings a cap left out, as a row of agent_closes the inbox counts (ReviewStore.capped). */
export function cappedDelta(measure: 'capped_conv' | 'capped_hour', now: string, version: number, n: number): CloseDelta {
  return { hour: hourOf(now), version, measure, value: 0, n };
}
