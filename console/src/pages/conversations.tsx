// An agent's conversations, newest first, with the list's filters; the first page refreshes every
// few seconds while it is shown, and new or changed rows are marked.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { CHANNEL_KINDS, type Agent, type ConversationStatus, type ConversationSummary } from '@switchboard/client';
import { asApiError, ok, useInterval, type ApiError } from '../api';
import { useSession } from '../session';
import { AnySelect, Empty, ErrorBox, Field, Head, StatusBadge, TableWrap, Time } from '../components/ui';

export const STATUSES: readonly ConversationStatus[] = ['active', 'paused', 'escalated', 'completed', 'abandoned'];
const LIVE_MS = 5000;

interface Filters {
  status: string;
  capability: string;
  user_id: string;
  channel: string;
  created_after: string;
  created_before: string;
}
/** Where conversations come from: the API, the web chat widget, or a messaging channel. */
const CHANNELS = ['api', 'web', ...CHANNEL_KINDS] as const;

const NO_FILTERS: Filters = { status: '', capability: '', user_id: '', channel: '', created_after: '', created_before: '' };

/** A datetime-local input's value as an ISO time (it is in the browser's zone). */
const isoOf = (local: string) => (local ? new Date(local).toISOString() : undefined);

export function Conversations({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [pages, setPages] = useState<string[]>([]); // cursors of the pages before this one
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [rows, setRows] = useState<ConversationSummary[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const seen = useRef<Map<string, string> | null>(null);

  async function load(live: boolean) {
    try {
      const page = ok(
        await client.api.listConversations({
          params: { slug: agent.slug },
          query: {
            limit: 25,
            ...(cursor ? { cursor } : {}),
            ...(filters.status ? { status: filters.status as ConversationStatus } : {}),
            ...(filters.capability ? { capability: filters.capability } : {}),
            ...(filters.user_id ? { user_id: filters.user_id } : {}),
            ...(CHANNELS.includes(filters.channel as (typeof CHANNELS)[number]) ? { channel: filters.channel as (typeof CHANNELS)[number] } : {}),
            ...(filters.created_after ? { created_after: isoOf(filters.created_after) } : {}),
            ...(filters.created_before ? { created_before: isoOf(filters.created_before) } : {}),
          },
        }),
      );
      // Rows that are new or changed since the last refresh are marked for a moment.
      const before = seen.current;
      const changed = new Set(live && before ? page.data.filter((r) => before.get(r.id) !== r.updated_at).map((r) => r.id) : []);
      seen.current = new Map(page.data.map((r) => [r.id, r.updated_at]));
      setFresh(changed);
      setRows(page.data);
      setNext(page.next_cursor);
      setError(null);
    } catch (err) {
      setError(asApiError(err));
    }
  }

  useEffect(() => {
    seen.current = null;
    setRows(null);
    void load(false);
  }, [client, agent.slug, filters, cursor]);
  // Live on the first page: later pages hold older conversations, which keep their places.
  useInterval(() => void load(true), cursor === undefined ? LIVE_MS : null);

  function apply(e: Event) {
    e.preventDefault();
    setPages([]);
    setCursor(undefined);
    setFilters({ ...draft });
  }

  const set = (k: keyof Filters) => (e: Event) => setDraft({ ...draft, [k]: (e.currentTarget as HTMLInputElement).value });
  const filtered = Object.values(filters).some(Boolean);
  return (
    <div>
      <h2>Conversations</h2>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <Field label="Status">
          {(id) => <AnySelect id={id} value={draft.status} options={STATUSES} onChange={(v) => setDraft({ ...draft, status: v })} />}
        </Field>
        <Field label="Capability">
          {(id) => (
            <AnySelect
              id={id}
              value={draft.capability}
              options={agent.capabilities.map((c) => c.name)}
              onChange={(v) => setDraft({ ...draft, capability: v })}
            />
          )}
        </Field>
        <Field label="User id">{(id) => <input id={id} value={draft.user_id} maxLength={256} onInput={set('user_id')} />}</Field>
        <Field label="Channel">
          {(id) => <AnySelect id={id} value={draft.channel} options={[...CHANNELS]} onChange={(v) => setDraft({ ...draft, channel: v })} />}
        </Field>
        <Field label="Started after">{(id) => <input id={id} type="datetime-local" value={draft.created_after} onInput={set('created_after')} />}</Field>
        <Field label="Started before">{(id) => <input id={id} type="datetime-local" value={draft.created_before} onInput={set('created_before')} />}</Field>
        <div class="row">
          <button type="submit" class="primary">
            Apply filters
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(NO_FILTERS);
              setPages([]);
              setCursor(undefined);
              setFilters(NO_FILTERS);
            }}
          >
            Clear
          </button>
        </div>
      </form>
      <p class="muted small" aria-live="polite">
        {cursor === undefined ? `Live: refreshed every ${LIVE_MS / 1000} s.` : 'An older page: not refreshed.'}
      </p>
      {error && <ErrorBox error={error} retry={() => void load(false)} />}
      {rows?.length === 0 && (
        <Empty title={filtered ? 'No conversation matches these filters' : 'No conversations yet'}>
          <p>{filtered ? 'Clear the filters or widen the time range.' : 'Start one in the Playground, or send a message to the converse endpoint.'}</p>
        </Empty>
      )}
      {rows && rows.length > 0 && (
        <TableWrap label="Conversations">
          <table class="conversations">
            <Head cols={['Conversation', 'Status', 'Capability', 'Outcome', 'User', 'Channel', 'Turns', 'Started', 'Updated']} />
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} class={fresh.has(r.id) ? 'fresh' : undefined}>
                  <td>
                    <Link href={`/conversations/${r.id}`} class="mono">
                      {r.id.slice(0, 8)}
                    </Link>
                  </td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <td>{r.capability}</td>
                  <td>{r.outcome ?? <span class="muted">—</span>}</td>
                  <td>{r.user_id ?? <span class="muted">—</span>}</td>
                  <td title={r.channel?.origin ?? undefined}>
                    {r.channel ? (r.channel.origin ? `${r.channel.kind} · ${r.channel.origin}` : r.channel.kind) : 'api'}
                  </td>
                  <td>{r.turn_count}</td>
                  <td>
                    <Time iso={r.created_at} />
                  </td>
                  <td>
                    <Time iso={r.updated_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <div class="row">
        <button
          type="button"
          disabled={pages.length === 0 && cursor === undefined}
          onClick={() => {
            const prev = [...pages];
            const c = prev.pop();
            setPages(prev);
            setCursor(c === '' ? undefined : c);
          }}
        >
          Newer
        </button>
        <button
          type="button"
          disabled={!next}
          onClick={() => {
            setPages([...pages, cursor ?? '']);
            setCursor(next ?? undefined);
          }}
        >
          Older
        </button>
      </div>
    </div>
  );
}
