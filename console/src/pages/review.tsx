// The review inbox: the messages the agent missed, grouped, the most recently seen first, with a
// reason filter and counts. Triage is keyboard-driven: j/k (or the arrows) move, x selects, a key
// per action (a: add as an example of the chosen capability, 1–9 choose it; o: out of scope;
// d: dismiss) acts on the selected items, or on the highlighted one. Adding shows the draft's diff.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { Agent, ReviewActionResult, ReviewItem, ReviewReason } from '@switchboard/client';
import { ok, useAction, useLoad } from '../api';
import { needs, useCan, useSession } from '../session';
import { Empty, ErrorBox, Field, Loading, Time } from '../components/ui';

/** Every reason's label: the compiler asks for one for each reason the contract names. */
const LABEL: Record<ReviewReason, string> = {
  fallback: 'Fell to the fallback',
  out_of_scope: 'Out of scope',
  low_margin: 'Small margin',
  switched: 'Left the flow',
  rephrased: 'Rephrased',
  escalated: 'Escalated soon after',
  slot_failed: 'Slot failed',
  unanswered: 'Not in the documents',
};
const REASONS = Object.entries(LABEL) as [ReviewReason, string][];

type Action = 'add_example' | 'add_out_of_scope' | 'dismiss';

export function Review({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const mayAct = useCan()('review.act', agent.slug);
  const [reason, setReason] = useState<ReviewReason | ''>('');
  const names = agent.capabilities.map((c) => c.name);
  const [target, setTarget] = useState(names[0] ?? '');
  const [active, setActive] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [done, setDone] = useState<{ action: Action; result: ReviewActionResult } | null>(null);
  const { busy, error, run } = useAction();
  const list = useLoad(
    async () => ok(await client.api.listReview({ params: { slug: agent.slug }, query: { limit: 50, ...(reason ? { reason } : {}) } })),
    [client, agent.slug, reason],
  );
  const items = list.data?.data ?? [];
  const current = items.at(Math.min(active, items.length - 1));
  const box = useRef<HTMLUListElement>(null);

  // A new list keeps the highlight in range, and drops selections of items no longer listed.
  useEffect(() => {
    setActive((a) => Math.max(0, Math.min(a, items.length - 1)));
    setSelected((s) => new Set([...s].filter((id) => items.some((i) => i.id === id))));
  }, [list.data]);

  function act(action: Action) {
    const ids = selected.size ? [...selected] : current ? [current.id] : [];
    if (!ids.length || busy) return;
    void run(async () => {
      const result = ok(
        await client.api.actOnReview({
          params: { slug: agent.slug },
          body: action === 'add_example' ? { items: ids, action, capability: target } : { items: ids, action },
        }),
      );
      setDone({ action, result });
      setSelected(new Set());
      list.reload();
      box.current?.focus();
    });
  }

  function onKey(e: KeyboardEvent) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const k = e.key;
    const move = (d: number) => setActive((a) => Math.max(0, Math.min(items.length - 1, a + d)));
    if (k === 'j' || k === 'ArrowDown') move(1);
    else if (k === 'k' || k === 'ArrowUp') move(-1);
    else if ((k === 'x' || k === ' ') && current) {
      setSelected((s) => {
        const n = new Set(s);
        if (n.has(current.id)) n.delete(current.id);
        else n.add(current.id);
        return n;
      });
    } else if (k === 'a') act('add_example');
    else if (k === 'o') act('add_out_of_scope');
    else if (k === 'd') act('dismiss');
    else if (/^[1-9]$/.test(k) && names[Number(k) - 1]) setTarget(names[Number(k) - 1]);
    else return;
    e.preventDefault();
  }

  const counts = list.data?.counts;
  return (
    <div>
      <h2>Review</h2>
      <p class="muted small">
        Messages the agent missed: they fell to the fallback, were routed with a small margin, were left or said again right after the reply, were escalated
        soon after, or failed a slot. Add them to the draft as examples or as out of scope, then evaluate the draft on the Evaluations tab.
      </p>
      <div class="row wrap" role="group" aria-label="Reason">
        <button type="button" aria-pressed={reason === ''} onClick={() => setReason('')}>
          All
        </button>
        {REASONS.map(([r, label]) => (
          <button key={r} type="button" aria-pressed={reason === r} onClick={() => setReason(r)}>
            {label} ({counts?.[r].items ?? 0})
          </button>
        ))}
      </div>
      <form class="review-actions" onSubmit={(e) => e.preventDefault()} aria-label="Review actions">
        <Field label="Add to capability">
          {(id) => (
            <select id={id} value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
              {names.map((n, i) => (
                <option key={n} value={n}>
                  {i < 9 ? `${i + 1}. ` : ''}
                  {n}
                </option>
              ))}
            </select>
          )}
        </Field>
        <div class="row">
          <button type="button" class="primary" disabled={busy || !current || !mayAct} onClick={() => act('add_example')}>
            Add as example (a)
          </button>
          <button type="button" disabled={busy || !current || !mayAct} onClick={() => act('add_out_of_scope')}>
            Out of scope (o)
          </button>
          <button type="button" disabled={busy || !current || !mayAct} onClick={() => act('dismiss')}>
            Dismiss (d)
          </button>
        </div>
        {!mayAct && <p class="hint">{needs('review.act')}</p>}
      </form>
      <p class="muted small" id="review-keys">
        Keys in the list: j / k or ↓ / ↑ move, x selects, a adds as an example of the chosen capability (1–9 choose it), o adds as out of scope, d dismisses. An
        action applies to the selected items, or to the highlighted one.
      </p>
      {error && <ErrorBox error={error} />}
      {done && <Outcome done={done} />}
      {list.error && <ErrorBox error={list.error} retry={list.reload} />}
      {!list.data && !list.error && <Loading what="the review inbox" />}
      {list.data && items.length === 0 && (
        <Empty title="Nothing to review">
          <p>Messages the agent misses appear here as its conversations happen.</p>
        </Empty>
      )}
      {items.length > 0 && (
        <ul
          ref={box}
          class="review-list"
          role="listbox"
          aria-label="Review items"
          aria-multiselectable="true"
          aria-describedby="review-keys"
          aria-activedescendant={current ? `review-${current.id}` : undefined}
          tabIndex={0}
          onKeyDown={onKey}
        >
          {items.map((i, n) => (
            <li
              key={i.id}
              id={`review-${i.id}`}
              role="option"
              aria-selected={selected.has(i.id)}
              class={n === active ? 'active' : undefined}
              onClick={() => setActive(n)}
            >
              <span class="check" aria-hidden="true">
                {selected.has(i.id) ? '☑' : '☐'}
              </span>
              <span class="reason">{LABEL[i.reason]}</span>
              <span class="message">“{i.message}”</span>
              <span class="muted small">
                ×{i.count} · routed to {i.capability}
                {i.margin !== undefined ? ` · margin ${i.margin}` : ''} · <Time iso={i.last_seen_at} />
              </span>
            </li>
          ))}
        </ul>
      )}
      {current && <Detail item={current} />}
    </div>
  );
}

/** The highlighted item's newest messages, each with its conversation. */
function Detail({ item }: { item: ReviewItem }) {
  return (
    <section class="review-detail" aria-label="Highlighted item">
      <h3>
        {LABEL[item.reason]}: “{item.message}”
      </h3>
      <ul>
        {item.occurrences.map((o) => (
          <li key={`${o.conversation_id}:${o.turn_index}`}>
            <Link href={`/conversations/${o.conversation_id}`}>conversation {o.conversation_id.slice(0, 8)}</Link>, turn {o.turn_index}, v{o.version}: “
            {o.message}”{' '}
            <span class="muted small">
              {Object.entries(o.detail)
                .map(([k, v]) => `${k.replace(/_/g, ' ')} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
                .join(' · ')}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Outcome({ done }: { done: { action: Action; result: ReviewActionResult } }) {
  const { result } = done;
  const d = result.draft;
  return (
    <div class="notice" role="status">
      <strong>
        {result.acted} item{result.acted === 1 ? '' : 's'}{' '}
        {done.action === 'dismiss' ? 'dismissed' : d ? `added to draft v${d.version}` : 'already in the draft'}
      </strong>
      {d && (
        <>
          <p class="small">
            From v{d.based_on}; not current. <Link href="/evaluations">Evaluate it</Link>.
          </p>
          <pre class="diff" aria-label="The draft's diff">
            {d.diff
              .split('\n')
              .filter((l) => !l.startsWith('===='))
              .map((l, n) => (
                <span key={n} class={l.startsWith('+') && !l.startsWith('+++') ? 'ins' : l.startsWith('-') && !l.startsWith('---') ? 'del' : undefined}>
                  {l}
                  {'\n'}
                </span>
              ))}
          </pre>
        </>
      )}
    </div>
  );
}
