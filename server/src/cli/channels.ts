// `npm run agents -- channel …`: connect an agent to Slack, Telegram, WhatsApp or SMS on a running
// server, pause, resume or remove a channel, and read its delivery log (docs/channels.md).
// Credentials are read from the environment or a prompt-free `--set name=value`, sent once and
// never printed.
import type { ChannelInfo, ChannelKind } from '@switchboard/contract';
import { describeFailure, reach, remoteClient, type RemoteOptions } from './remote.js';

function describeChannel(c: ChannelInfo): string {
  const hook = c.webhook_set === true ? ' (setWebhook done)' : '';
  return `${c.channel.padEnd(9)} ${c.status.padEnd(7)} ${c.webhook_url}${hook}\n          credentials set: ${c.credentials.join(', ')}`;
}

/** `name=value` pairs into credentials; a value of `env:NAME` is read from the environment (kept out of shell history). */
function credentialsOf(pairs: string[], env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const at = p.indexOf('=');
    if (at < 1) throw new Error(`--set takes name=value (or name=env:VARIABLE), not "${p}"`);
    const name = p.slice(0, at);
    const raw = p.slice(at + 1);
    const value = raw.startsWith('env:') ? env[raw.slice(4)] : raw;
    if (value === undefined) throw new Error(`${name}: the environment has no ${raw.slice(4)}`);
    out[name] = value;
  }
  return out;
}

export async function connect(slug: string, kind: ChannelKind, pairs: string[], o: RemoteOptions & { paused?: boolean; setWebhook?: boolean }): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () =>
    sb.api.putChannel({
      params: { slug, channel: kind },
      body: { credentials: credentialsOf(pairs), status: o.paused ? 'paused' : 'active', set_webhook: o.setWebhook ?? false },
    }),
  );
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`connected ${slug} to ${kind}`);
  console.log(describeChannel(r.body));
  if (!r.body.webhook_set) console.log(`paste the webhook URL into ${kind}'s settings (docs/channels.md says where)`);
}

export async function listChannels(slug: string, o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.listChannels({ params: { slug } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  if (!r.body.data.length) console.log(`${slug} has no channels: npm run agents -- channel connect ${slug} <slack|telegram|whatsapp|sms> --set …`);
  for (const c of r.body.data) console.log(describeChannel(c));
}

export async function setStatus(slug: string, kind: ChannelKind, status: 'active' | 'paused', o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.patchChannel({ params: { slug, channel: kind }, body: { status } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`${slug}'s ${kind} channel is ${r.body.status}`);
}

export async function removeChannel(slug: string, kind: ChannelKind, o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.deleteChannel({ params: { slug, channel: kind } }));
  if (r.status !== 204) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`removed ${slug}'s ${kind} channel: its credentials are forgotten and its webhook URL answers 404`);
}

export async function deliveries(
  slug: string,
  o: RemoteOptions & { channel?: ChannelKind; status?: 'pending' | 'sent' | 'failed' | 'refused'; limit: number },
): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.listChannelDeliveries({ params: { slug }, query: { channel: o.channel, status: o.status, limit: o.limit } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  if (!r.body.data.length) console.log('no deliveries');
  for (const d of r.body.data) {
    const took = d.latency_ms === null ? '' : ` in ${Math.round(d.latency_ms)} ms`;
    console.log(
      `${d.created_at}  ${d.channel.padEnd(8)} ${d.source.padEnd(8)} ${d.status.padEnd(7)} ${d.calls_done}/${d.calls} calls, ${d.attempts} attempt(s)${took}  conversation ${d.conversation_id}`,
    );
    if (d.last_error) console.log(`          last error: ${d.last_error}`);
  }
}
