// Messaging channels (docs/channels.md): connecting one, and its webhook. A webhook checks the
// provider's signature before reading anything else, stores each message once (keyed by the
// provider's own id, so redeliveries are no-ops on every replica) and answers at once; the
// inbound workers (inbound.ts) then run each user's messages in order, and the replies go out on
// the outbox (deliveries.ts).
import { randomBytes } from 'node:crypto';
import type { ChannelInfo, ChannelKind } from '@switchboard/contract';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { ADAPTERS } from '../../channels/index.js';
import type { HookAnswer, HookRequest } from '../../channels/adapter.js';
import type { Conversation, TurnRow } from '../../domain.js';
import { ChannelSetupError, InputError, InvalidSignatureError, NotFoundError, SecretsDisabledError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { OncePer } from '../../lib/once-per.js';
import { Passes } from '../../lib/passes.js';
import { parseIgnored, type ChannelRow, type ChannelStore, type OutboxRow } from '../../store/channel-store.js';
import type { AgentService } from '../agents/agent-service.js';
import type { ConversationService } from '../conversations/conversation-service.js';
import type { LifecycleService } from '../conversations/lifecycle.js';
import { mustHaveRoom, spend, spendQuietly, type Limits } from '../limits.js';
import type { Metrics } from '../metrics.js';
import { Outbox } from '../outbox/outbox.js';
import { seal } from '../secrets.js';
import { ChannelDeliveries } from './deliveries.js';
import { ChannelInbound } from './inbound.js';
import { binding, ChannelOpener } from './open.js';

/** How long a processed message's provider id is kept to recognise a redelivery (WhatsApp retries for up to 7 days). */
const KEEP_MESSAGE_IDS_MS = 8 * 24 * 3600_000;
/** How often a pass also audits deliveries a dead process left unaudited and forgets old message ids. */
const CHORES_MS = 30_000;
/**
 * Webhook requests one client address may send a minute that name no channel. Generous, since a
 * provider's addresses are shared by every tenant and a removed channel's URL is such a request:
 * it bounds a sprayer of made-up ids to a few primary-key reads a second.
 */
const UNKNOWN_HOOKS_PER_ADDRESS = 300;
/** Webhook requests without a valid signature one client address may send one channel a minute (a misconfigured secret blocks only its own channel). */
const REFUSED_HOOKS_PER_ADDRESS = 30;
/** Webhook requests one channel id may take a minute, counted before it is looked up, as a multiple of its messages a minute. */
const HOOKS_PER_MESSAGE = 2;

export interface ChannelOptions {
  intervalMs: number;
  concurrency: { total: number; perTenant: number };
  inboundPerMinute: number;
  apiUrls: Partial<Record<ChannelKind, string>>;
  /** Key that encrypts credentials (SECRETS_KEY); without it channels cannot be connected. */
  key: Buffer | undefined;
  publicUrl: string | undefined;
  timeoutMs?: number;
}

export interface ChannelDeps {
  store: ChannelStore;
  agents: AgentService;
  conversations: ConversationService;
  lifecycle: LifecycleService;
  metrics: Metrics;
  limits: Limits;
  clock: Clock;
  logger: Logger;
}

/** A channel id: the unguessable part of its webhook URL. */
const CHANNEL_ID = /^ch_[A-Za-z0-9_-]{32}$/;

export class ChannelService {
  private readonly inbound: RateLimiterAbstract;
  private readonly hooks: RateLimiterAbstract;
  private readonly unknownHooks: RateLimiterAbstract;
  private readonly refusedHooks: RateLimiterAbstract;
  private readonly refusalsSaid = new OncePer();
  private readonly ignoredSaid = new OncePer();
  private readonly opener: ChannelOpener;
  /** Users' waiting messages and their replies each have their own slots, so that a slow provider's replies never hold up any tenant's turns. */
  private readonly workers: ChannelInbound;
  private readonly replies: ChannelDeliveries;
  private readonly outbox: Outbox<number, OutboxRow>;
  private timer: NodeJS.Timeout | null = null;
  private readonly passes: Passes;
  private choresAt = 0;

  constructor(
    private readonly deps: ChannelDeps,
    private readonly opts: ChannelOptions,
  ) {
    // Shared by every replica through Redis when REDIS_URL is set, else counted in each process.
    // Per channel: the messages its traffic (or someone replaying its signed requests) may bring;
    // before any lookup, the requests its URL may take; per address, the failures it may send.
    const limiter = (name: string, points: number) => deps.limits.limiter({ name: `channel:${name}`, points, seconds: 60 });
    this.inbound = limiter('in', opts.inboundPerMinute);
    this.hooks = limiter('hooks', opts.inboundPerMinute * HOOKS_PER_MESSAGE);
    this.unknownHooks = limiter('unknown', UNKNOWN_HOOKS_PER_ADDRESS);
    this.refusedHooks = limiter('refused', REFUSED_HOOKS_PER_ADDRESS);
    const timeoutMs = opts.timeoutMs ?? 10_000;
    this.opener = new ChannelOpener({ key: opts.key, apiUrls: opts.apiUrls, timeoutMs }, deps.logger);
    const common = { store: deps.store, opener: this.opener, metrics: deps.metrics, clock: deps.clock, logger: deps.logger };
    this.replies = new ChannelDeliveries({ ...common, lifecycle: deps.lifecycle }, timeoutMs);
    this.outbox = new Outbox(this.replies, {
      concurrency: opts.concurrency,
      clock: deps.clock,
      log: deps.logger,
      onOutcome: (queue, outcome) => deps.metrics.outboxAttempt(queue, outcome),
    });
    this.passes = new Passes(
      () => this.tick(),
      (err) => deps.logger.warn({ err }, 'channel pass failed'),
    );
    this.workers = new ChannelInbound(
      { ...common, agents: deps.agents, conversations: deps.conversations },
      opts.concurrency,
      () => this.outbox.kick(),
      () => this.kick(),
    );
  }

  // --- Connecting -------------------------------------------------------------------------

  private webhookUrl(id: string, origin: string | null): string {
    const base = this.opts.publicUrl ?? origin ?? 'http://127.0.0.1:3000';
    return `${base.replace(/\/+$/, '')}/hooks/v1/${id}`;
  }

  private info(row: ChannelRow, origin: string | null): ChannelInfo {
    return {
      channel: row.kind as ChannelKind,
      status: row.status,
      webhook_url: this.webhookUrl(row.id, origin),
      credentials: JSON.parse(row.fields) as string[],
      webhook_set: row.webhook_set === null ? null : Boolean(row.webhook_set),
      ignored: parseIgnored(row.ignored),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  async list(tenantId: string, slug: string, origin: string | null): Promise<ChannelInfo[]> {
    const agent = await this.deps.agents.get(tenantId, slug);
    return (await this.deps.store.ofAgent(tenantId, agent.id)).map((r) => this.info(r, origin));
  }

  async put(
    tenantId: string,
    slug: string,
    kind: ChannelKind,
    body: { credentials: Record<string, string>; status: 'active' | 'paused'; set_webhook: boolean },
    origin: string | null,
  ): Promise<ChannelInfo> {
    const agent = await this.deps.agents.get(tenantId, slug);
    const adapter = ADAPTERS[kind];
    const parsed = adapter.credentials.safeParse(body.credentials);
    if (!parsed.success) {
      throw new InputError(
        `Invalid ${kind} credentials`,
        parsed.error.issues.map((i) => ({ path: ['body', 'credentials', ...i.path].join('.'), message: i.message })),
      );
    }
    if (body.set_webhook && !adapter.setWebhook)
      throw new InputError(`set_webhook is for channels whose provider takes its webhook URL by a call, and ${adapter.label} does not`, [
        { path: 'body.set_webhook', message: `${kind} has no such call: paste webhook_url into its settings` },
      ]);
    if (!this.opts.key) throw new SecretsDisabledError('Channel credentials are kept encrypted, and this server has no key for them');
    const creds = adapter.complete ? adapter.complete(parsed.data) : parsed.data;
    const existing = await this.deps.store.get(tenantId, agent.id, kind);
    const id = existing?.id ?? `ch_${randomBytes(24).toString('base64url')}`;
    let webhookSet: boolean | null = null;
    if (body.set_webhook && adapter.setWebhook) {
      // Before anything is stored: a refused setWebhook leaves the channel as it was.
      const result = await adapter
        .setWebhook(creds, this.webhookUrl(id, origin), this.opener.http(kind))
        .catch((e: unknown) => ({ ok: false, status: null, error: (e as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable' }));
      if (!result.ok) throw new ChannelSetupError(`${adapter.label} did not take the webhook URL: ${result.error ?? `HTTP ${result.status}`}`);
      webhookSet = true;
    }
    const now = iso(this.deps.clock.now());
    const row = await this.deps.store.put({
      id,
      tenant_id: tenantId,
      agent_id: agent.id,
      kind,
      status: body.status,
      credentials: JSON.stringify(seal(this.opts.key, binding(tenantId, id), JSON.stringify(creds))),
      fields: JSON.stringify(Object.keys(creds).sort()),
      webhook_set: webhookSet,
      created_at: now,
      updated_at: now,
    });
    this.deps.logger.info({ tenant: tenantId, agent: slug, channel: kind }, existing ? 'channel credentials replaced' : 'channel connected');
    return this.info(row, origin);
  }

  private async owned(tenantId: string, slug: string, kind: ChannelKind): Promise<ChannelRow> {
    const agent = await this.deps.agents.get(tenantId, slug);
    const row = await this.deps.store.get(tenantId, agent.id, kind);
    if (!row) throw new NotFoundError('channel_not_found', `The agent ${slug} has no ${kind} channel`);
    return row;
  }

  async setStatus(tenantId: string, slug: string, kind: ChannelKind, status: 'active' | 'paused', origin: string | null): Promise<ChannelInfo> {
    const row = await this.owned(tenantId, slug, kind);
    const now = iso(this.deps.clock.now());
    await this.deps.store.setStatus(row.id, status, now);
    if (status === 'active') {
      this.kick();
      this.outbox.kick();
    }
    return this.info({ ...row, status, updated_at: now }, origin);
  }

  async remove(tenantId: string, slug: string, kind: ChannelKind): Promise<void> {
    const row = await this.owned(tenantId, slug, kind);
    await this.deps.store.remove(row.id, iso(this.deps.clock.now()));
    this.deps.logger.info({ tenant: tenantId, agent: slug, channel: kind }, 'channel removed: its credentials are forgotten');
  }

  async deliveries(tenantId: string, slug: string, q: Parameters<ChannelStore['list']>[2]) {
    const agent = await this.deps.agents.any(tenantId, slug);
    return this.deps.store.list(tenantId, agent.id, q);
  }

  // --- Webhooks ---------------------------------------------------------------------------

  /**
   * A provider's request to a channel's webhook URL, from client address `address`. What it may
   * cost is bounded before the channel is looked up: an address past its requests for unknown
   * channels, or past its refused requests to this channel, or a channel id past its requests a
   * minute, is refused at once (429). Then the signature is checked: a request that fails it is
   * refused (401) and counted, and nothing of it is read further or stored. Refusals are logged
   * once a minute per channel and reason.
   */
  async hook(channelId: string, req: HookRequest, address: string): Promise<HookAnswer> {
    await mustHaveRoom(this.unknownHooks, address, 'Too many requests for unknown channels from this address; retry later');
    const known = CHANNEL_ID.test(channelId);
    const refusals = `${address}\n${channelId}`;
    if (known) {
      await mustHaveRoom(this.refusedHooks, refusals, 'Too many unsigned requests to this channel from this address; retry later');
      await this.limited(this.hooks, channelId, 'unknown', 'Too many requests on this channel; retry later');
    }
    const row = known ? await this.deps.store.byId(channelId) : undefined;
    const channel = row ? this.opener.open(row) : null;
    if (!channel) {
      await spendQuietly(this.unknownHooks, address);
      this.deps.metrics.channelInbound('unknown', 'unknown_channel');
      throw new NotFoundError('channel_not_found', 'No such channel');
    }
    const { kind, adapter, creds } = channel;
    if (req.method === 'GET') {
      if (!adapter.challenge) throw new NotFoundError('not_found', `${kind} webhooks are POST only`);
      const answer = adapter.challenge(req, creds);
      this.deps.metrics.channelInbound(kind, answer.status === 200 ? 'verification' : 'refused');
      if (answer.status !== 200) await spendQuietly(this.refusedHooks, refusals);
      return answer;
    }
    const refused = adapter.verify(req, creds, this.deps.clock.now());
    if (refused) {
      await spendQuietly(this.refusedHooks, refusals);
      this.deps.metrics.channelInbound(kind, 'refused');
      if (this.refusalsSaid.due(`${channelId}\n${refused}`))
        this.deps.logger.warn(
          { tenant: channel.row.tenant_id, channel: kind, reason: refused },
          'channel webhook refused (said once a minute per channel and reason)',
        );
      throw new InvalidSignatureError(`The request does not carry a valid ${kind} signature (${refused})`);
    }
    await this.limited(this.inbound, channelId, kind, 'Too many messages on this channel; retry later');
    const parsed = adapter.parse(req);
    if (channel.row.status === 'paused') {
      this.deps.metrics.channelInbound(kind, 'paused');
      return parsed.answer;
    }
    if (!parsed.messages.length) {
      this.deps.metrics.channelInbound(kind, 'ignored');
      // Why nothing is answered (a bot's own message, a status notification, a button press that
      // could not be read): logged and kept beside the channel, once a minute per channel and reason.
      const reason = parsed.ignored ?? 'no message in the update';
      if (this.ignoredSaid.due(`${channelId}\n${reason}`)) {
        this.deps.logger.info(
          { tenant: channel.row.tenant_id, channel: kind, reason },
          `${kind} update ignored: ${reason} (said once a minute per channel and reason)`,
        );
        await this.deps.store
          .noteIgnored(channelId, { at: iso(this.deps.clock.now()), reason })
          .catch((err: unknown) => this.deps.logger.warn({ err, channel: kind }, 'an ignored update could not be noted'));
      }
      return parsed.answer;
    }
    const now = iso(this.deps.clock.now());
    const fresh = await this.deps.store.receive(
      channel.row,
      parsed.messages.map((m) => ({ key: m.key, user: m.user, payload: JSON.stringify(m) })),
      now,
    );
    if (fresh) this.deps.metrics.channelInbound(kind, 'accepted', fresh);
    if (parsed.messages.length > fresh) this.deps.metrics.channelInbound(kind, 'duplicate', parsed.messages.length - fresh);
    if (fresh) this.kick();
    return parsed.answer;
  }

  /** Spends one of `channelId`'s requests of `limiter`, counting a refusal in the metrics. */
  private async limited(limiter: RateLimiterAbstract, channelId: string, kind: ChannelKind | 'unknown', detail: string): Promise<void> {
    try {
      await spend(limiter, channelId, detail);
    } catch (e) {
      this.deps.metrics.channelInbound(kind, 'rate_limited');
      throw e;
    }
  }

  // --- Workers ----------------------------------------------------------------------------

  start(): void {
    if (this.opts.intervalMs <= 0 || this.timer) return;
    this.outbox.start(this.opts.intervalMs);
    this.timer = setInterval(() => this.kick(), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.passes.stop();
    await this.workers.stop();
    await this.outbox.stop();
  }

  /** Starts an inbound pass soon (a message arrived, a channel resumed): one at a time, another after it if asked meanwhile. */
  kick(): void {
    this.passes.kick();
  }

  /** Works every waiting message and due reply, and what they make due, and waits for it (tests, CLIs). */
  async runOnce(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      await this.passes.running;
      const started = await this.tick();
      await this.workers.settled();
      const sent = Object.values(await this.outbox.runOnce()).reduce((a, b) => a + b, 0);
      if (!started && !sent && !this.workers.lane.jobs.size) return;
    }
  }

  /** An inbound pass, and every 30 s the chores; answers how many users it started. */
  private async tick(): Promise<number> {
    const started = await this.workers.pass();
    const now = this.deps.clock.now();
    if (now.getTime() - this.choresAt >= CHORES_MS) {
      this.choresAt = now.getTime();
      await this.replies.auditLeftovers(iso(new Date(now.getTime() - 60_000)));
      await this.deps.store.forgetInbound(iso(new Date(now.getTime() - KEEP_MESSAGE_IDS_MS)), 1000);
    }
    return started;
  }

  /**
   * A person's reply to a conversation that came through a channel (an escalation answered in
   * the API or the console): it goes out through the channel like the agent's replies.
   */
  async operatorReply(c: Conversation, turn: TurnRow): Promise<void> {
    if (await this.replies.queueOperatorReply(c, turn)) this.outbox.kick();
  }
}
