// Channels: put the agent in Slack, Telegram, WhatsApp or SMS. The connect form takes the
// provider's credentials (sent once, never shown again: the server answers only which fields are
// set) and answers the webhook URL to paste into the provider; each channel can be paused,
// resumed or removed; below, the delivery log of replies sent through channels (docs/channels.md).
import { useState } from 'preact/hooks';
import type { Agent, ChannelInfo } from '@switchboard/client';
import { ok, useAction, useLoad } from '../api';
import { useSession } from '../session';
import { CHANNEL_NAMES, ConfirmDialog, ErrorBox, Field, formatMs, Head, Loading, TableWrap, Time } from '../components/ui';

type Kind = ChannelInfo['channel'];

/** Each channel's credential fields, as the contract names them, and what they are. */
const FIELDS: Record<Kind, { name: string; label: string; optional?: boolean }[]> = {
  slack: [
    { name: 'bot_token', label: 'Bot token (xoxb-…)' },
    { name: 'signing_secret', label: 'Signing secret' },
  ],
  telegram: [
    { name: 'bot_token', label: 'Bot token from @BotFather' },
    { name: 'secret_token', label: 'Secret token (left empty: one is generated)', optional: true },
  ],
  whatsapp: [
    { name: 'access_token', label: 'Access token' },
    { name: 'app_secret', label: 'App secret' },
    { name: 'phone_number_id', label: 'Phone number id' },
    { name: 'verify_token', label: 'Verify token (you choose it; type the same in the dashboard)' },
  ],
  sms: [
    { name: 'account_sid', label: 'Account SID (AC…)' },
    { name: 'auth_token', label: 'Auth token' },
    { name: 'from', label: 'From: a number (+15551234567) or messaging service (MG…)' },
  ],
};

const WHERE: Record<Kind, string> = {
  slack: 'the Slack app’s Event Subscriptions and Interactivity request URLs',
  telegram: 'setWebhook (tick the box and the server does it)',
  whatsapp: 'the Meta app dashboard’s WhatsApp callback URL, with the same verify token',
  sms: 'the Twilio number’s “A message comes in” webhook (HTTP POST)',
};

function ConnectForm({ agent, onDone }: { agent: Agent; onDone: () => void }) {
  const { client } = useSession();
  const [kind, setKind] = useState<Kind>('slack');
  const [values, setValues] = useState<Record<string, string>>({});
  const [setWebhook, setSetWebhook] = useState(false);
  const [made, setMade] = useState<ChannelInfo | null>(null);
  const { busy, error, run } = useAction();

  function submit(e: Event) {
    e.preventDefault();
    void run(async () => {
      const credentials = Object.fromEntries(Object.entries(values).filter(([k, v]) => v.trim() && FIELDS[kind].some((f) => f.name === k)));
      const info = ok(
        await client.api.putChannel({
          params: { slug: agent.slug, channel: kind },
          body: { credentials, status: 'active', set_webhook: kind === 'telegram' && setWebhook },
        }),
      );
      setMade(info);
      // The credentials leave the page: only the server keeps them.
      setValues({});
      onDone();
    });
  }

  return (
    <form onSubmit={submit} aria-labelledby="connect-h">
      <h3 id="connect-h">Connect a channel</h3>
      <Field label="Channel">
        {(id) => (
          <select
            id={id}
            value={kind}
            onChange={(e) => {
              setKind(e.currentTarget.value as Kind);
              setValues({});
            }}
          >
            {(Object.keys(FIELDS) as Kind[]).map((k) => (
              <option key={k} value={k}>
                {CHANNEL_NAMES[k]}
              </option>
            ))}
          </select>
        )}
      </Field>
      {FIELDS[kind].map((f) => (
        <Field key={`${kind}.${f.name}`} label={f.label}>
          {(id) => (
            <input
              id={id}
              name={f.name}
              type={f.name === 'phone_number_id' || f.name === 'from' || f.name === 'account_sid' ? 'text' : 'password'}
              autoComplete="off"
              required={!f.optional}
              value={values[f.name] ?? ''}
              onInput={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
            />
          )}
        </Field>
      ))}
      {kind === 'telegram' && (
        <label>
          <input type="checkbox" checked={setWebhook} onChange={(e) => setSetWebhook(e.currentTarget.checked)} /> Call setWebhook now
        </label>
      )}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Connecting…' : `Connect ${CHANNEL_NAMES[kind]}`}
      </button>
      {error && <ErrorBox error={error} />}
      {made && (
        <p role="status">
          Connected {CHANNEL_NAMES[made.channel]}. Paste <code class="mono">{made.webhook_url}</code> into {WHERE[made.channel]}
          {made.webhook_set ? ' (done: Telegram took setWebhook)' : ''}.
        </p>
      )}
    </form>
  );
}

function Deliveries({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const log = useLoad(
    async () => ok(await client.api.listChannelDeliveries({ params: { slug: agent.slug }, query: { limit: 50 } })).data,
    [client, agent.slug],
  );
  return (
    <section aria-labelledby="deliveries-h">
      <h3 id="deliveries-h">Deliveries</h3>
      {log.error && <ErrorBox error={log.error} retry={log.reload} />}
      {!log.data && !log.error && <Loading what="the deliveries" />}
      {log.data && !log.data.length && <p class="muted">No replies sent through channels yet.</p>}
      {log.data && log.data.length > 0 && (
        <TableWrap label="Channel deliveries">
          <table>
            <Head cols={['Stored', 'Channel', 'Source', 'Status', 'Calls', 'Attempts', 'Latency', 'Last error', 'Conversation']} />
            <tbody>
              {log.data.map((d) => (
                <tr key={d.id}>
                  <td>
                    <Time iso={d.created_at} />
                  </td>
                  <td>{CHANNEL_NAMES[d.channel]}</td>
                  <td>{d.source === 'operator' ? 'a person' : 'the agent'}</td>
                  <td>{d.status}</td>
                  <td>
                    {d.calls_done}/{d.calls}
                  </td>
                  <td title={d.history.map((h) => `${h.attempt}. ${h.call}: ${h.status ?? '—'}${h.error ? ` ${h.error}` : ''}`).join('\n')}>{d.attempts}</td>
                  <td>{formatMs(d.latency_ms)}</td>
                  <td>{d.last_error ?? <span class="muted">—</span>}</td>
                  <td class="mono">{d.conversation_id.slice(0, 8)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}

export function Channels({ agent }: { agent: Agent }) {
  const { client } = useSession();
  const list = useLoad(async () => ok(await client.api.listChannels({ params: { slug: agent.slug } })).data, [client, agent.slug]);
  const [removing, setRemoving] = useState<Kind | null>(null);
  const { busy, error, run } = useAction();

  const setStatus = (kind: Kind, status: 'active' | 'paused') =>
    void run(async () => {
      ok(await client.api.patchChannel({ params: { slug: agent.slug, channel: kind }, body: { status } }));
      list.reload();
    });
  const remove = (kind: Kind) =>
    void run(async () => {
      ok(await client.api.deleteChannel({ params: { slug: agent.slug, channel: kind } }), 204);
      setRemoving(null);
      list.reload();
    });

  return (
    <div>
      <h2>Channels</h2>
      <p class="muted small">
        Put this agent in Slack, Telegram, WhatsApp or SMS with your own credentials. They are stored encrypted and never shown again. Messages are checked
        against the provider’s signature, answered once each and in order, and a person’s reply to an escalated conversation goes out through its channel.
      </p>
      {list.error && <ErrorBox error={list.error} retry={list.reload} />}
      {!list.data && !list.error && <Loading what="the channels" />}
      {list.data && !list.data.length && <p class="muted">No channels yet.</p>}
      {list.data && list.data.length > 0 && (
        <TableWrap label="Connected channels">
          <table>
            <Head cols={['Channel', 'Status', 'Webhook URL', 'Credentials set', 'Since', '']} />
            <tbody>
              {list.data.map((c) => (
                <tr key={c.channel}>
                  <td>{CHANNEL_NAMES[c.channel]}</td>
                  <td>{c.status}</td>
                  <td class="mono small">{c.webhook_url}</td>
                  <td>{c.credentials.join(', ')}</td>
                  <td>
                    <Time iso={c.created_at} />
                  </td>
                  <td>
                    <button type="button" disabled={busy} onClick={() => setStatus(c.channel, c.status === 'active' ? 'paused' : 'active')}>
                      {c.status === 'active' ? 'Pause' : 'Resume'}
                    </button>{' '}
                    <button type="button" class="danger" disabled={busy} onClick={() => setRemoving(c.channel)}>
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {list.data?.some((c) => c.ignored.length > 0) && (
        <section aria-label="Ignored updates">
          <h3>Updates not answered</h3>
          <p class="muted small">
            What the providers sent that was not a message to answer, and why (the newest first; each reason once a minute). A reason you do not expect here,
            such as a button press that could not be read, is worth a look at the provider’s settings.
          </p>
          <ul>
            {list.data.flatMap((c) =>
              c.ignored.map((e) => (
                <li key={`${c.channel}-${e.at}-${e.reason}`}>
                  {CHANNEL_NAMES[c.channel]}: {e.reason} (<Time iso={e.at} />)
                </li>
              )),
            )}
          </ul>
        </section>
      )}
      {error && <ErrorBox error={error} />}
      <ConfirmDialog
        open={removing !== null}
        title={`Remove ${removing ? CHANNEL_NAMES[removing] : ''}?`}
        confirm="Remove"
        danger
        onConfirm={() => removing && remove(removing)}
        onCancel={() => setRemoving(null)}
      >
        <p>Its credentials are forgotten and its webhook URL stops answering. Replies not yet sent fail.</p>
      </ConfirmDialog>
      <ConnectForm agent={agent} onDone={list.reload} />
      <Deliveries agent={agent} />
    </div>
  );
}
