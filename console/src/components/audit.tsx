// The audit log as a timeline: per user turn, the routing decision with its candidates' scores as
// bars against the threshold, the actions and model calls with what went out and came back, phase
// and status changes, and where the turn's time went.
import type { Actor, AuditEntry } from '@switchboard/client';
import { Json, Time, formatMs } from './ui';

type DataOf<T extends AuditEntry['type']> = Extract<AuditEntry, { type: T }>['data'];
type Routing = DataOf<'routing_decision'>;
type Timing = DataOf<'turn_timing'>;

/** Candidates' scores as bars on one 0–1 scale, with the threshold as a line across them. */
function RoutingBars({ data }: { data: Routing }) {
  const candidates = [...data.candidates].sort((a, b) => Number(b.eligible) - Number(a.eligible) || b.score - a.score);
  const threshold = Math.min(Math.max(data.threshold, 0), 1);
  return (
    <div class="routing">
      <p>
        <strong>{data.selected.capability}</strong> by {data.strategy}
        {data.reason && <> ({data.reason.replace(/_/g, ' ')})</>}, score {data.selected.score.toFixed(3)}, threshold {data.threshold.toFixed(3)}
        {data.similarity !== undefined && (
          <>
            , similarity {data.similarity.toFixed(3)}
            {data.min_similarity !== undefined && <> (min {data.min_similarity.toFixed(3)})</>}
          </>
        )}
        {data.from && (
          <>
            , switched from {data.from.capability}
            {data.from.phase && <> at {data.from.phase}</>}
          </>
        )}
      </p>
      {data.llm && (
        <p class="small">
          Model router {data.llm.model} answered {data.llm.answer ?? 'nothing'} in {formatMs(data.llm.duration_ms)}
          {data.llm.error && <> ({data.llm.error})</>}
        </p>
      )}
      {candidates.length > 0 && (
        <ul class="bars" aria-label={`Candidates' scores, threshold ${data.threshold.toFixed(3)}`}>
          {candidates.map((c) => {
            const score = Math.min(Math.max(c.score, 0), 1);
            const chosen = c.capability === data.selected.capability;
            return (
              <li key={c.capability} class={`${c.eligible ? '' : 'ineligible'} ${chosen ? 'chosen' : ''}`} data-capability={c.capability}>
                <span class="bar-label">
                  {c.capability}
                  {chosen && <span class="sr-only"> (selected)</span>}
                </span>
                <span class="bar-track" aria-hidden="true">
                  <span class="bar-fill" style={{ width: `${(score * 100).toFixed(1)}%` }} />
                  <span class="bar-threshold" style={{ left: `${(threshold * 100).toFixed(1)}%` }} title={`threshold ${data.threshold.toFixed(3)}`} />
                </span>
                <span class="bar-value">
                  {c.score.toFixed(3)}
                  {!c.eligible && <> · ineligible{c.reason ? `: ${c.reason.replace(/_/g, ' ')}` : ''}</>}
                </span>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

const PARTS = [
  ['routing_ms', 'routing'],
  ['engine_ms', 'engine'],
  ['actions_ms', 'actions'],
  ['llm_ms', 'model'],
  ['storage_ms', 'storage'],
] as const;

/** A turn's time split into its parts, as one bar. */
/** What a privacy policy masked in the entry's messages, by type: counts, never values (docs/privacy.md). */
function Masked({ counts }: { counts?: Record<string, number> }) {
  const entries = Object.entries(counts ?? {});
  if (!entries.length) return null;
  return <p class="masked">Masked: {entries.map(([type, n]) => `${type.replace(/_/g, ' ')} ${n}`).join(', ')}</p>;
}

function TimingBar({ data }: { data: Timing }) {
  const total = Math.max(data.total_ms, 0.001);
  const parts = PARTS.map(([k, label]) => ({ label, ms: data[k] ?? 0 })).filter((p) => p.ms > 0);
  return (
    <div class="timing">
      <div class="timing-bar" aria-hidden="true">
        {parts.map((p) => (
          <span
            key={p.label}
            class={`part part-${p.label}`}
            style={{ width: `${Math.max((p.ms / total) * 100, 0.5).toFixed(1)}%` }}
            title={`${p.label} ${formatMs(p.ms)}`}
          />
        ))}
      </div>
      <p class="small">
        Total {formatMs(data.total_ms)}:{' '}
        {parts.map((p, i) => (
          <span key={p.label}>
            {i > 0 && ', '}
            <span class={`swatch part-${p.label}`} aria-hidden="true" /> {p.label} {formatMs(p.ms)}
          </span>
        ))}
      </p>
    </div>
  );
}

function EntryBody({ e }: { e: AuditEntry }) {
  switch (e.type) {
    case 'routing_decision':
      return <RoutingBars data={e.data} />;
    case 'action_call': {
      const d = e.data;
      return (
        <div>
          <p>
            <strong>{d.action}</strong>
            {d.via === 'tool' && ' (called by the model)'}: <code>{d.request.method}</code> <code class="wrap">{d.request.url}</code> →{' '}
            <span class={d.outcome === 'ok' ? 'good' : 'bad'}>
              {d.response ? d.response.status : 'no response'} {d.outcome}
            </span>{' '}
            in {formatMs(e.duration_ms)}
            {d.attempts > 1 && `, ${d.attempts} attempts`}
          </p>
          {d.error && <p class="bad small">{d.error}</p>}
          <Json label="Request" value={d.request} />
          <Json label="Response" value={d.response} />
        </div>
      );
    }
    case 'llm_call': {
      const d = e.data;
      return (
        <div>
          <p>
            <strong>{d.model}</strong> step {d.step} in {d.phase}: {d.input_tokens} tokens in, {d.output_tokens} out, {formatMs(d.duration_ms)}
            {d.finish_reason && `, finished: ${d.finish_reason}`}
            {d.streamed && ', streamed'}
          </p>
          {d.text && <blockquote>{d.text}</blockquote>}
          {d.tool_calls.length > 0 && (
            <ul class="small">
              {d.tool_calls.map((t, i) => (
                <li key={i}>
                  tool call <code>{t.name}</code> <code class="wrap">{JSON.stringify(t.arguments)}</code>
                </li>
              ))}
            </ul>
          )}
          {d.passages.length > 0 && <p class="small">Knowledge passages: {d.passages.map((p) => `${p.id} (${p.score.toFixed(2)})`).join(', ')}</p>}
          {d.grounding && (
            <div class="small">
              <p class={d.grounding.supported ? undefined : 'bad'}>
                {d.grounding.supported ? 'Said: the passages it cites hold every claim' : 'Not said: a claim the passages it cites do not hold'}
                {d.grounding.cited.length ? ` (cites ${d.grounding.cited.join(', ')})` : ' (cites no passage)'}
              </p>
              {d.grounding.claims.length > 0 && (
                <ul aria-label="Claims checked">
                  {d.grounding.claims.map((c, i) => (
                    <li key={i}>
                      {c.sentence ? <>&ldquo;{c.sentence}&rdquo;: </> : null}
                      {!c.passage
                        ? 'no cited passage'
                        : c.missing_numbers
                          ? `${c.passage} does not hold ${c.missing_numbers.join(', ')}`
                          : `${c.passage} holds ${Math.round(c.support * 100)}% of its words`}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
        </div>
      );
    }
    case 'phase_transition':
      return (
        <p>
          {e.data.capability}: {e.data.from ?? 'start'} → <strong>{e.data.to}</strong>
        </p>
      );
    case 'status_change':
      return (
        <p>
          {e.data.from ?? 'new'} → <strong>{e.data.to}</strong> ({e.data.reason.replace(/_/g, ' ')}){e.data.outcome && `, outcome ${e.data.outcome}`}
          {e.data.actor && `, by ${actorName(e.data.actor)}`}
        </p>
      );
    case 'turn_timing':
      return (
        <>
          <TimingBar data={e.data} />
          <Masked counts={e.data.masked} />
        </>
      );
    case 'slot_filled':
      return (
        <p>
          Slot <code>{e.data.slot}</code> filled from &ldquo;{e.data.source}&rdquo; (skipped {e.data.phase})
        </p>
      );
    case 'operator_message':
      return (
        <>
          <p>
            Written by {e.data.author}
            {e.data.actor && actorName(e.data.actor) !== e.data.author && ` (signed in as ${actorName(e.data.actor)})`}
          </p>
          <Masked counts={e.data.masked} />
        </>
      );
    case 'error':
      return (
        <p class="bad">
          {e.data.code}: {e.data.message}
        </p>
      );
    case 'erasure':
      return (
        <p>
          Personal data erased <Time iso={e.data.erased_at} />
        </p>
      );
    case 'context_changed':
      return <Json label="Context" value={e.data.context} />;
    case 'channel_delivery':
      return (
        <p>
          {e.data.source === 'operator' ? 'A person’s reply' : 'Reply'} {e.data.status} through {e.data.channel} after {e.data.attempts} attempt
          {e.data.attempts === 1 ? '' : 's'}
          {e.data.latency_ms !== null ? ` (${Math.round(e.data.latency_ms)} ms)` : ''}
          {e.data.error ? ` — ${e.data.error}` : ''}
        </p>
      );
    case 'knowledge_search':
      return (
        <>
          <p>
            {e.data.mode === 'answer' ? (e.data.answered ? 'Answered from ' : 'Nothing good enough in ') : 'Passages for the model from '}
            {e.data.sources.length ? e.data.sources.join(', ') : 'no source'}
            {e.data.snapshot !== undefined ? ` at knowledge snapshot ${e.data.snapshot}` : ''}
            {e.data.min_confidence !== undefined ? ` (confidence needed ${e.data.min_confidence})` : ''}
            {e.data.error ? ` — ${e.data.error}` : ''}
          </p>
          {e.data.passages.length > 0 && (
            <ul class="small">
              {e.data.passages.map((p) => (
                <li key={p.id}>
                  <code>{p.id}</code> confidence {p.confidence.toFixed(2)}, score {p.score.toFixed(2)}
                </li>
              ))}
            </ul>
          )}
        </>
      );
  }
}

const TITLES: Record<AuditEntry['type'], string> = {
  routing_decision: 'Routing',
  action_call: 'Action call',
  llm_call: 'Model call',
  phase_transition: 'Phase',
  status_change: 'Status',
  turn_timing: 'Timing',
  slot_filled: 'Slot',
  operator_message: 'Operator',
  error: 'Error',
  erasure: 'Erasure',
  context_changed: 'Context',
  channel_delivery: 'Channel',
  knowledge_search: 'Knowledge',
};

export function Timeline({ entries, userTurns }: { entries: AuditEntry[]; userTurns: Map<number, string> }) {
  const groups: { turn: number | null; entries: AuditEntry[] }[] = [];
  for (const e of entries) {
    const last = groups.at(-1);
    if (last && last.turn === e.turn_index) last.entries.push(e);
    else groups.push({ turn: e.turn_index, entries: [e] });
  }
  if (groups.length === 0) return <p class="muted">The audit log is empty.</p>;
  return (
    <ol class="timeline">
      {groups.map((g) => (
        <li key={`${g.turn}-${g.entries[0].sequence}`} class="turn-group">
          <h4>{g.turn === null ? 'Outside a user turn' : `Turn ${g.turn}: “${userTurns.get(g.turn) ?? '…'}”`}</h4>
          <ol>
            {g.entries.map((e) => (
              <li key={e.id} class={`entry entry-${e.type}`} data-type={e.type}>
                <div class="entry-head">
                  <span class="entry-type">{TITLES[e.type]}</span>
                  <span class="muted small">
                    #{e.sequence} · <Time iso={e.timestamp} />
                  </span>
                </div>
                <EntryBody e={e} />
              </li>
            ))}
          </ol>
        </li>
      ))}
    </ol>
  );
}

/** Who acted, as a person reads it: a person's email, a key by its id's start, the gateway. */
function actorName(a: Actor): string {
  if (a.kind === 'person') return a.email ?? a.subject;
  return a.kind === 'key' ? `key ${a.id.slice(0, 8)}` : 'the gateway';
}
