// One conversation: its transcript beside its audit timeline, kept current by the conversation's
// event stream; the audit chain's verification; for an escalated conversation, the operator's box;
// erasure behind a confirmation.
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { citationName, type Agent, type AuditEntry, type ConversationDetail, type SwitchboardClient } from '@switchboard/client';
import { allPages, ok, useAction, useLoad } from '../api';
import { needs, useCan, useSession } from '../session';
import { Timeline } from '../components/audit';
import { CHANNEL_NAMES, ConfirmDialog, ErrorBox, Json, Loading, StatusBadge, Time } from '../components/ui';

/** Every audit entry of a conversation (at most 10 000). */
export function auditOf(client: SwitchboardClient, slug: string, id: string): Promise<AuditEntry[]> {
  return allPages(async (cursor) => ok(await client.api.getAuditLogs({ params: { slug, id }, query: { limit: 500, ...(cursor ? { cursor } : {}) } })));
}

export function ConversationView({ agent, id }: { agent: Agent; id: string }) {
  const { client } = useSession();
  const data = useLoad(async () => {
    const [detail, entries] = await Promise.all([
      client.api.getConversation({ params: { slug: agent.slug, id } }).then((r) => ok(r)),
      auditOf(client, agent.slug, id),
    ]);
    return { detail, entries };
  }, [client, agent.slug, id]);
  const [live, setLive] = useState<'on' | 'off'>('off');

  // The event stream: any turn, status or phase change reloads the page's data.
  useEffect(() => {
    const stop = new AbortController();
    void (async () => {
      try {
        setLive('on');
        for await (const _ of client.events(agent.slug, id, { signal: stop.signal })) data.reload();
      } catch {
        // The stream was refused (an erased conversation, a revoked key): the page still works.
      } finally {
        if (!stop.signal.aborted) setLive('off');
      }
    })();
    return () => stop.abort();
  }, [client, agent.slug, id]);

  if (data.error && !data.data) return <ErrorBox error={data.error} retry={data.reload} />;
  if (!data.data) return <Loading what="the conversation" />;
  const { detail, entries } = data.data;
  const userTurns = new Map(detail.turns.flatMap((t, i) => (t.role === 'user' ? [[i, t.message] as const] : [])));
  return (
    <div>
      <p>
        <Link href="/conversations">← Conversations</Link>
      </p>
      <h2>
        Conversation <span class="mono">{detail.id}</span>
      </h2>
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={detail.status} />
            {detail.outcome && detail.outcome !== detail.status && <> {detail.outcome}</>}
          </dd>
        </div>
        <div>
          <dt>Capability</dt>
          <dd>{detail.capability}</dd>
        </div>
        <div>
          <dt>Phase</dt>
          <dd>{detail.phase}</dd>
        </div>
        <div>
          <dt>Version</dt>
          <dd>v{detail.agent_version}</dd>
        </div>
        <div>
          <dt>User</dt>
          <dd>{detail.user_id ?? '—'}</dd>
        </div>
        <div>
          <dt>Channel</dt>
          <dd>
            {detail.channel?.kind === 'web' ? (
              <>
                web chat widget on {detail.channel.origin}
                {detail.channel.page_url && <span class="muted small"> · {detail.channel.page_url}</span>}
              </>
            ) : detail.channel ? (
              // A person's reply here goes out through this channel.
              <>{CHANNEL_NAMES[detail.channel.kind]} (replies you send go out there)</>
            ) : (
              'API'
            )}
          </dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>
            <Time iso={detail.created_at} />
          </dd>
        </div>
        <div>
          <dt>Updated</dt>
          <dd>
            <Time iso={detail.updated_at} />
          </dd>
        </div>
      </dl>
      <p class="muted small" aria-live="polite">
        {live === 'on' ? 'Live: new turns and status changes appear as they happen.' : 'Not live: reload the page to see changes.'}
      </p>
      {data.error && <ErrorBox error={data.error} retry={data.reload} />}
      {detail.erased_at && (
        <p class="notice">
          Personal data erased <Time iso={detail.erased_at} />: turns, slots, context and user id are gone; the audit skeleton stays.
        </p>
      )}
      {detail.status === 'escalated' && <OperatorBox agent={agent} detail={detail} onDone={data.reload} />}
      <div class="split">
        <section aria-labelledby="transcript-h">
          <h3 id="transcript-h">Transcript</h3>
          <Transcript detail={detail} />
          {Object.keys(detail.slots).length > 0 && <Json label="Slots" value={detail.slots} />}
          {detail.context && <Json label="Context" value={detail.context} />}
        </section>
        <section aria-labelledby="audit-h">
          <h3 id="audit-h">Audit timeline</h3>
          <Verify agent={agent} id={detail.id} entries={entries.length} />
          <Timeline entries={entries} userTurns={userTurns} />
        </section>
      </div>
      <Erase agent={agent} detail={detail} onDone={data.reload} />
    </div>
  );
}

function Transcript({ detail }: { detail: Pick<ConversationDetail, 'turns'> }) {
  return (
    <ol class="transcript">
      {detail.turns.length === 0 && <li class="muted">No turns.</li>}
      {detail.turns.map((t, i) => (
        <li key={i} class={`turn ${t.role} ${t.author ? 'operator' : ''}`}>
          <div class="who small">
            {t.role === 'user' ? 'User' : t.author ? `Operator ${t.author}` : 'Agent'} · turn {i}
            {t.phase && <> · {t.phase}</>} · <Time iso={t.timestamp} />
          </div>
          <div class="text">{t.message}</div>
          {t.options && t.options.length > 0 && (
            <ul class="options small" aria-label="Options offered">
              {t.options.map((o) => (
                <li key={o.value}>{o.label}</li>
              ))}
            </ul>
          )}
          {t.citations && t.citations.length > 0 && (
            <ul class="citations small" aria-label="Sources cited">
              {t.citations.map((c) => (
                <li key={c.passage_id}>
                  {/^https?:\/\//i.test(c.url ?? '') ? (
                    <a href={c.url!} target="_blank" rel="noopener noreferrer">
                      {citationName(c)}
                    </a>
                  ) : (
                    citationName(c)
                  )}{' '}
                  <code>{c.passage_id}</code>
                </li>
              ))}
            </ul>
          )}
        </li>
      ))}
    </ol>
  );
}

function Verify({ agent, id, entries }: { agent: Agent; id: string; entries: number }) {
  const { client } = useSession();
  const [result, setResult] = useState<{ valid: boolean; text: string } | null>(null);
  const { error, run } = useAction();
  const verify = () =>
    run(async () => {
      const v = ok(await client.api.verifyAuditLogs({ params: { slug: agent.slug, id } }));
      setResult(
        v.valid
          ? {
              valid: true,
              // "Intact" only when every entry is keyed: entries from before the key prove consistency only.
              text:
                v.keyed_from === undefined || v.keyed_entries === v.entries
                  ? `Chain intact: ${v.entries} entries and every turn match their chained hashes${v.keyed_from === undefined ? ' (no operator key: this proves consistency, not who wrote them)' : ', every entry keyed'}.`
                  : `Chain valid, not intact: ${v.entries - v.keyed_entries} of ${v.entries} entries predate the operator key and prove consistency only.`,
            }
          : {
              valid: false,
              text: `Chain broken at entry #${v.first_broken!.sequence} (${v.first_broken!.reason.replace(/_/g, ' ')}${v.first_broken!.turn_index !== undefined ? `, turn ${v.first_broken!.turn_index}` : ''}).`,
            },
      );
    });
  return (
    <div class="verify">
      <button type="button" onClick={() => void verify()}>
        Verify the audit chain ({entries} entries)
      </button>
      {result && (
        <p role="status" class={result.valid ? 'good' : 'bad'}>
          {result.text}
        </p>
      )}
      {error && <ErrorBox error={error} />}
    </div>
  );
}

function OperatorBox({ agent, detail, onDone }: { agent: Agent; detail: ConversationDetail; onDone: () => void }) {
  const { client } = useSession();
  const mayReply = useCan()('conversations.reply', agent.slug);
  const [message, setMessage] = useState('');
  const [author, setAuthor] = useState('operator');
  const [outcome, setOutcome] = useState('resolved');
  const { busy, error, run: act } = useAction();
  const run = (fn: () => Promise<void>) =>
    act(async () => {
      await fn();
      onDone();
    });
  const params = { slug: agent.slug, id: detail.id };
  return (
    <section class="operator" aria-labelledby="operator-h">
      <h3 id="operator-h">Answer as a person</h3>
      <p class="small muted">The conversation was escalated: the agent no longer answers it. Your reply is stored as an agent turn written by you.</p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            ok(await client.api.postOperatorMessage({ params, body: { message, author } }), 201);
            setMessage('');
          });
        }}
      >
        <label>
          Reply
          <textarea name="operator-message" rows={3} required value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
        </label>
        <label>
          Written by
          <input name="author" value={author} maxLength={200} required onInput={(e) => setAuthor(e.currentTarget.value)} />
        </label>
        <div class="row">
          <button type="submit" class="primary" disabled={busy || !mayReply}>
            Send reply
          </button>
          <label class="inline">
            Outcome{' '}
            <input name="outcome" value={outcome} pattern="[a-z][a-z0-9_]*" maxLength={64} required onInput={(e) => setOutcome(e.currentTarget.value)} />
          </label>
          <button
            type="button"
            disabled={busy || !mayReply}
            onClick={() => void run(async () => void ok(await client.api.setStatus({ params, body: { status: 'completed', outcome } })))}
          >
            Close the conversation
          </button>
        </div>
        {!mayReply && <p class="hint">{needs('conversations.reply')}</p>}
      </form>
      {error && <ErrorBox error={error} />}
    </section>
  );
}

function Erase({ agent, detail, onDone }: { agent: Agent; detail: ConversationDetail; onDone: () => void }) {
  const { client } = useSession();
  const [open, setOpen] = useState(false);
  const { error, run } = useAction();
  const mayErase = useCan()('conversations.erase', agent.slug);
  if (detail.erased_at || !mayErase) return null;
  return (
    <section class="danger-zone" aria-labelledby="erase-h">
      <h3 id="erase-h">Erase personal data</h3>
      <p class="small">Removes the turns, slots, context and user id of this conversation for good; the audit skeleton stays.</p>
      <button type="button" class="danger" onClick={() => setOpen(true)}>
        Erase this conversation…
      </button>
      {error && <ErrorBox error={error} />}
      <ConfirmDialog
        open={open}
        title="Erase this conversation?"
        confirm="Erase"
        danger
        onCancel={() => setOpen(false)}
        onConfirm={() => {
          setOpen(false);
          void run(async () => {
            ok(await client.api.eraseConversation({ params: { slug: agent.slug, id: detail.id } }), 204);
            onDone();
          });
        }}
      >
        <p>Its {detail.turns.length} turns and every personal detail will be gone, and this cannot be undone. The conversation&rsquo;s audit skeleton stays.</p>
      </ConfirmDialog>
    </section>
  );
}
