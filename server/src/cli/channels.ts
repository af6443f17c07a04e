// `npm run agents -- channel …`: connect an agent to Slack, Telegram, WhatsApp or SMS on a running
// server, pause, resume or remove a channel, and read its delivery log (docs/channels.md).
// Credentials are read from the environment or a prompt-free `--set name=value`, sent once and
// never printed.
import { CHANNEL_KINDS, type ChannelInfo, type ChannelKind } from '@switchboard/contract';
import { Option, type Command } from 'commander';
import { channelOf, versionNumber } from './args.js';
import { describeFailure, reach, remoteClient, remoteOptions, sameServer, type RemoteOptions } from './remote.js';

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

async function connect(slug: string, kind: ChannelKind, pairs: string[], o: RemoteOptions & { paused?: boolean; setWebhook?: boolean }): Promise<void> {
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

async function listChannels(slug: string, o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.listChannels({ params: { slug } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  if (!r.body.data.length)
    console.log(`${slug} has no channels: npm run agents -- channel connect ${slug} <slack|telegram|whatsapp|sms> --set …${sameServer(o)}`);
  for (const c of r.body.data) console.log(describeChannel(c));
}

async function setStatus(slug: string, kind: ChannelKind, status: 'active' | 'paused', o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.patchChannel({ params: { slug, channel: kind }, body: { status } }));
  if (r.status !== 200) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`${slug}'s ${kind} channel is ${r.body.status}`);
}

async function removeChannel(slug: string, kind: ChannelKind, o: RemoteOptions): Promise<void> {
  const sb = remoteClient(o);
  const r = await reach(o, () => sb.api.deleteChannel({ params: { slug, channel: kind } }));
  if (r.status !== 204) throw new Error(describeFailure(o, r.status, r.body));
  console.log(`removed ${slug}'s ${kind} channel: its credentials are forgotten and its webhook URL answers 404`);
}

async function deliveries(
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

/** channel connect | list | pause | resume | remove | deliveries. */
export function register(cli: Command): void {
  const channels = cli
    .command('channel')
    .description('messaging channels of an agent on a running server: connect, list, pause, resume, remove, deliveries (docs/channels.md)');
  remoteOptions(
    channels
      .command('connect')
      .description("connect (or reconnect) a channel with the provider's credentials; prints the webhook URL to paste into the provider")
      .argument('<slug>', 'the agent')
      .argument('<channel>', CHANNEL_KINDS.join(', '), channelOf)
      .option('--set <name=value...>', 'a credential (name=env:VARIABLE reads it from the environment)', (v: string, prev: string[] | undefined) => [
        ...(prev ?? []),
        v,
      ])
      .option('--paused', 'connect it paused')
      .option('--set-webhook', 'telegram: have the server call setWebhook itself'),
  ).action(async (slug: string, kind: ChannelKind, opts: RemoteOptions & { set?: string[]; paused?: boolean; setWebhook?: boolean }) => {
    await connect(slug, kind, opts.set ?? [], opts);
  });
  remoteOptions(channels.command('list').description("an agent's channels and their webhook URLs").argument('<slug>', 'the agent')).action(
    async (slug: string, opts: RemoteOptions) => {
      await listChannels(slug, opts);
    },
  );
  for (const [name, status] of [
    ['pause', 'paused'],
    ['resume', 'active'],
  ] as const) {
    remoteOptions(
      channels
        .command(name)
        .description(name === 'pause' ? 'pause a channel: messages are acknowledged and dropped, replies wait' : 'resume a paused channel')
        .argument('<slug>', 'the agent')
        .argument('<channel>', CHANNEL_KINDS.join(', '), channelOf),
    ).action(async (slug: string, kind: ChannelKind, opts: RemoteOptions) => {
      await setStatus(slug, kind, status, opts);
    });
  }
  remoteOptions(
    channels
      .command('remove')
      .description('remove a channel and forget its credentials')
      .argument('<slug>', 'the agent')
      .argument('<channel>', CHANNEL_KINDS.join(', '), channelOf),
  ).action(async (slug: string, kind: ChannelKind, opts: RemoteOptions) => {
    await removeChannel(slug, kind, opts);
  });
  remoteOptions(
    channels
      .command('deliveries')
      .description('replies sent through channels, newest first, with attempts and errors')
      .argument('<slug>', 'the agent')
      .addOption(new Option('--channel <channel>', 'only this channel').choices([...CHANNEL_KINDS]))
      .addOption(new Option('--status <status>', 'only deliveries in this state').choices(['pending', 'sent', 'failed', 'refused']))
      .option('--limit <n>', 'how many', (v) => versionNumber(v), 20),
  ).action(async (slug: string, opts: RemoteOptions & { channel?: ChannelKind; status?: 'pending' | 'sent' | 'failed' | 'refused'; limit: number }) => {
    await deliveries(slug, opts);
  });
}
