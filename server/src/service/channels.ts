// Messaging channels (docs/channels.md): connecting one, its webhook, and the two queues behind
// it. A webhook checks the provider's signature before reading anything else, stores each message
// once (keyed by the provider's own id, so redeliveries are no-ops on every replica) and answers
// at once; workers then run each user's messages in order, one user at a time on one replica (a
// lease on the user's row), through the converse service like any other caller, and queue the
// reply. Replies go out in order per user, retried with backoff and the provider's retry-after,
// every call in the delivery log and each finished delivery in the conversation's audit log.
import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { isChannelKind, type ChannelInfo, type ChannelKind, type ConverseResponse } from '@switchboard/contract';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { request } from 'undici';
import { ADAPTERS } from '../channels/index.js';
import type { CallResult, ChannelAdapter, HookAnswer, HookRequest, InboundMessage, ProviderHttp } from '../channels/adapter.js';
import type { AuditDraft, Conversation, TurnRow } from '../domain.js';
import { AppError, ChannelSetupError, InputError, InvalidSignatureError, NotFoundError, SecretsDisabledError } from '../errors.js';
import { iso, type Clock } from '../lib/clock.js';
import { Lane } from '../lib/lane.js';
import { OncePer } from '../lib/once-per.js';
import type { ChannelRow, ChannelStore, InboundRow, OutboxRow } from '../store/channel-store.js';
import type { AgentService } from './agent-service.js';
import type { ConversationService } from './conversation-service.js';
import type { LifecycleService } from './lifecycle.js';
import { mustHaveRoom, spend, spendQuietly, type Limits } from './limits.js';
import type { Metrics } from './metrics.js';
import { seal, unseal, type Sealed } from './secrets.js';

/** Seconds to wait after the 1st, 2nd, … failed attempt of a delivery (about 50 minutes in all, then it fails). */
const BACKOFF_SECONDS = [2, 10, 30, 120, 300, 900, 1800];
/** Tries of one inbound message whose turn failed for a passing reason (the database, a crash). */
const INBOUND_TRIES = 5;
/** How long a worker holds a user's messages; renewed before each message. */
const LEASE_MS = 120_000;
/** The longest retry-after honoured (a provider asking for more is retried then). */
const MAX_RETRY_AFTER_S = 3600;
/** What a provider's answer may weigh. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** How long a processed message's provider id is kept to recognise a redelivery (WhatsApp retries for up to 7 days). */
const KEEP_MESSAGE_IDS_MS = 8 * 24 * 3600_000;
/** Provider calls one attempt makes at most (a longer reply goes on in the next, at once). */
const MAX_CALLS_PER_ATTEMPT = 8;
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

/** A channel with its credentials opened. */
interface OpenChannel {
  row: ChannelRow;
  kind: ChannelKind;
  adapter: ChannelAdapter;
  creds: Record<string, string>;
}

/** What a delivery's audit entry says. */
type AuditedDelivery = NonNullable<Awaited<ReturnType<ChannelStore['delivery']>>>;

const binding = (tenantId: string, channelId: string) => Buffer.from(`channel\u0000${tenantId}\u0000${channelId}`);
/** A channel id: the unguessable part of its webhook URL. */
const CHANNEL_ID = /^ch_[A-Za-z0-9_-]{32}$/;
/** The conversation's user id for a channel user: namespaced by channel. */
const userIdOf = (kind: ChannelKind, userKey: string) => `${kind}:${userKey}`;

/** Reads a provider's answer up to MAX_ANSWER_BYTES (more is cut off: no answer of theirs needs it). */
async function providerCall(req: { url: string; headers: Record<string, string>; body: string }, timeoutMs: number) {
  const res = await request(req.url, { method: 'POST', headers: req.headers, body: req.body, signal: AbortSignal.timeout(timeoutMs) });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      res.body.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return { status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') };
}

export class ChannelService {
  private readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly inbound: RateLimiterAbstract;
  private readonly hooks: RateLimiterAbstract;
  private readonly unknownHooks: RateLimiterAbstract;
  private readonly refusedHooks: RateLimiterAbstract;
  private readonly refusalsSaid = new OncePer();
  /** Turns of waiting messages, and deliveries: each its own slots, so that a slow provider's replies never hold up any tenant's turns. */
  private readonly turns: Lane;
  private readonly sends: Lane;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private kicked = false;
  private starved = false;
  /** A reply was queued since the last pass: the next pass sends it. */
  private queued = false;
  private auditedAt = 0;
  private stopped = false;
  private readonly timeoutMs: number;

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
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.turns = new Lane(opts.concurrency);
    this.sends = new Lane(opts.concurrency);
  }

  private get inFlight(): number {
    return this.turns.jobs.size + this.sends.jobs.size;
  }

  private settled(): Promise<unknown> {
    return Promise.allSettled([...this.turns.jobs.values(), ...this.sends.jobs.values()]);
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
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private http(kind: ChannelKind): ProviderHttp {
    return { base: (this.opts.apiUrls[kind] ?? ADAPTERS[kind].defaultApiUrl).replace(/\/+$/, ''), call: (req) => providerCall(req, this.timeoutMs) };
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
        .setWebhook(creds, this.webhookUrl(id, origin), this.http(kind))
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
    if (status === 'active') this.kick();
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

  private open(row: ChannelRow): OpenChannel | null {
    if (!isChannelKind(row.kind) || !this.opts.key) return null;
    try {
      const creds = JSON.parse(unseal(this.opts.key, binding(row.tenant_id, row.id), JSON.parse(row.credentials) as Sealed)) as Record<string, string>;
      return { row, kind: row.kind, adapter: ADAPTERS[row.kind], creds };
    } catch {
      this.deps.logger.warn(
        { tenant: row.tenant_id, channel: row.kind },
        'stored channel credentials do not decrypt (SECRETS_KEY changed, or the row was altered)',
      );
      return null;
    }
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
    const channel = row ? this.open(row) : null;
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
      // Why nothing is answered (a bot's own message, a status notification), for whoever wonders.
      this.deps.logger.debug({ tenant: channel.row.tenant_id, channel: kind, reason: parsed.ignored }, 'channel webhook without a message to answer');
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
    this.timer = setInterval(() => this.kick(), this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => undefined);
    await this.settled();
  }

  /** Starts a pass soon (a message arrived, a delivery is due): one pass at a time, another after it if asked meanwhile. */
  kick(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.kicked = true;
      return;
    }
    this.ticking = this.tick()
      .catch((err: unknown) => this.deps.logger.warn({ err }, 'channel pass failed'))
      .finally(() => {
        this.ticking = null;
        if (this.kicked) {
          this.kicked = false;
          this.kick();
        }
      });
  }

  /** Works everything due now and waits for it (tests, CLIs). */
  async runOnce(): Promise<void> {
    for (let i = 0; i < 100; i++) {
      await this.ticking;
      await this.tick();
      if (!this.inFlight) {
        await this.tick();
        if (!this.inFlight) return;
      }
      await this.settled();
    }
  }

  private run(lane: Lane, key: string, tenantId: string, work: () => Promise<void>): void {
    lane.run(
      key,
      tenantId,
      () => work().catch((err: unknown) => this.deps.logger.warn({ err, work: key.split(':')[0] }, 'channel work failed; it is retried')),
      () => {
        // Work left for want of room, a reply just queued, or a user's next reply after this one, starts now;
        // otherwise the next message or the timer starts a pass.
        if (this.starved || lane === this.sends || this.queued) {
          this.starved = false;
          this.queued = false;
          this.kick();
        }
      },
    );
  }

  private async tick(): Promise<void> {
    const now = this.deps.clock.now();
    const { total, perTenant } = this.opts.concurrency;
    // Users with messages waiting and no lease on them, at most `perTenant` of each tenant, so
    // that every tenant's oldest waiting users are in every pass however long another's queue is.
    if (this.turns.free > 0) {
      for (const u of await this.deps.store.waitingUsers(iso(now), perTenant, total * 4)) {
        const key = `in:${u.channel_id}:${u.user_key}`;
        if (this.turns.jobs.has(key)) continue;
        if (!this.turns.room(u.tenant_id)) {
          this.starved = true;
          continue;
        }
        if (!(await this.deps.store.lease(u.channel_id, u.user_key, this.owner, iso(now), iso(new Date(now.getTime() + LEASE_MS))))) continue;
        this.run(this.turns, key, u.tenant_id, () => this.drainUser(u.channel_id, u.user_key));
      }
    }
    // Replies due, in order per user, at most `perTenant` of each tenant at once.
    const free = this.sends.free;
    if (free > 0) {
      const due = (await this.deps.store.dueDeliveries(iso(now), perTenant, free + perTenant)).filter((d) => !this.sends.jobs.has(`out:${d.id}`));
      const picked: number[] = [];
      const busy = this.sends.counts();
      for (const d of due) {
        if (picked.length >= free) break;
        const n = busy.get(d.tenant_id) ?? 0;
        if (n >= perTenant) continue;
        busy.set(d.tenant_id, n + 1);
        picked.push(d.id);
      }
      if (picked.length) {
        const until = iso(new Date(now.getTime() + this.claimMs()));
        for (const row of await this.deps.store.claim(picked, iso(now), until)) this.run(this.sends, `out:${row.id}`, row.tenant_id, () => this.deliver(row));
      }
    }
    // Every 30 s: finished deliveries whose audit entry a dead process did not write, and the ids
    // of messages processed long enough ago that no provider redelivers them.
    if (now.getTime() - this.auditedAt >= 30_000) {
      this.auditedAt = now.getTime();
      for (const r of await this.deps.store.unaudited(iso(new Date(now.getTime() - 60_000)), 20)) await this.audit(Number(r.id)).catch(() => undefined);
      await this.deps.store.forgetInbound(iso(new Date(now.getTime() - KEEP_MESSAGE_IDS_MS)), 1000);
    }
  }

  /** Runs a user's waiting messages oldest first, holding the user's lease. */
  private async drainUser(channelId: string, userKey: string): Promise<void> {
    let retryIn = 0;
    try {
      for (let first = true; ; first = false) {
        const row = await this.deps.store.nextInbound(channelId, userKey);
        if (!row || this.stopped) return;
        if (!first) await this.deps.store.renew(channelId, userKey, this.owner, iso(new Date(this.deps.clock.now().getTime() + LEASE_MS)));
        const done = await this.process(row);
        if (done === 'retry') {
          // A passing failure: the user's messages wait (5 s, 15 s, 45 s, …) before the next try.
          retryIn = 5000 * 3 ** row.attempts;
          return;
        }
        // The reply goes out in a delivery slot of its own (replies leave in order per user, whoever sends them).
        if (done) this.queued = true;
      }
    } finally {
      // After a passing failure the lease is kept until the next try: no process (this one neither) takes the user sooner.
      if (retryIn) await this.deps.store.renew(channelId, userKey, this.owner, iso(new Date(this.deps.clock.now().getTime() + retryIn)));
      else await this.deps.store.release(channelId, userKey, this.owner);
    }
  }

  /** How long a claimed delivery is held: its calls' time-outs and some. */
  private claimMs(): number {
    return this.timeoutMs * (MAX_CALLS_PER_ATTEMPT + 1) + 30_000;
  }

  /**
   * One message: its turn and its reply's delivery, queued. Answers whether a reply was queued,
   * or 'retry' when the message is to be tried again later.
   */
  private async process(row: InboundRow): Promise<boolean | 'retry'> {
    const now = () => iso(this.deps.clock.now());
    const channelRow = await this.deps.store.byId(row.channel_id);
    const channel = channelRow ? this.open(channelRow) : null;
    const msg = JSON.parse(row.payload ?? 'null') as InboundMessage | null;
    if (!channel || !msg) {
      await this.deps.store.completeInbound(row, { conversationId: null, replyTo: '{}', options: null, now: now(), error: 'channel removed' }, null);
      return false;
    }
    const { kind } = channel;
    const slug = await this.deps.agents.slugOf(channel.row.tenant_id, channel.row.agent_id).catch(() => null);
    const user = await this.deps.store.user(row.channel_id, row.user_key);
    const offered = JSON.parse(user?.options ?? '[]') as { label: string; value: string }[];
    // Which conversation: fixed once, so that a retry after a crash sends the same request.
    let target = row.target ? (JSON.parse(row.target) as { conversationId?: string; newId?: string; n: number }) : null;
    if (!target) {
      // The user's current conversation; when it has closed since, the turn says so (409) and a new one takes the message.
      target = user?.conversation_id ? { conversationId: user.conversation_id, n: 0 } : { newId: randomUUID(), n: 0 };
      await this.deps.store.setTarget(row.id, JSON.stringify(target));
    }
    const message = chosen(msg, offered);
    const userId = userIdOf(kind, row.user_key);
    let response: ConverseResponse | null = null;
    let error: string | undefined;
    for (let round = 0; round < 2 && !response && slug; round++) {
      try {
        response = await this.deps.conversations.converse({
          tenantId: channel.row.tenant_id,
          slug,
          body: {
            message,
            ...(target.conversationId
              ? { conversation_id: target.conversationId }
              : { context: { version: 'v1', context: { identity: { user_id: userId } } } }),
          },
          userIdHeader: userId,
          requestId: `channel-${row.id}`,
          idempotencyKey: `channel:${row.channel_id}:${row.id}:${target.n}`,
          channel: { kind, origin: row.channel_id, pageUrl: null },
          ...(target.newId ? { newConversationId: target.newId } : {}),
        });
      } catch (err) {
        const e = err as AppError;
        // The conversation closed (or was erased, or reached its turn limit) since: a new one takes the message.
        if (
          target.conversationId &&
          e instanceof AppError &&
          (e.code === 'conversation_closed' || e.code === 'conversation_not_found' || e.code === 'limit_exceeded')
        ) {
          target = { newId: randomUUID(), n: target.n + 1 };
          await this.deps.store.setTarget(row.id, JSON.stringify(target));
          continue;
        }
        if (e instanceof AppError && e.status < 500 && e.status !== 429) {
          error = `${e.code}: ${e.message}`.slice(0, 300);
          break;
        }
        const attempts = row.attempts + 1;
        const failed = attempts >= INBOUND_TRIES;
        await this.deps.store.retryInbound(row.id, attempts, ((err as Error).message || String(err)).slice(0, 300), failed, now());
        this.deps.metrics.channelInbound(kind, failed ? 'failed' : 'retried');
        this.deps.logger.warn({ err, tenant: channel.row.tenant_id, channel: kind, attempts }, 'a channel message could not be answered');
        return failed ? false : 'retry';
      }
    }
    if (!slug) error = 'agent_not_found: the agent was deleted';
    if (!response) {
      await this.deps.store.completeInbound(row, { conversationId: null, replyTo: '{}', options: null, now: now(), error: error ?? 'no answer' }, null);
      this.deps.metrics.channelInbound(kind, 'failed');
      this.deps.logger.warn({ tenant: channel.row.tenant_id, channel: kind, error }, 'a channel message was not answered');
      return false;
    }
    const reply = { text: response.response.message, options: response.response.options };
    const calls = [...(msg.acknowledge ?? []), ...(reply.text || reply.options.length ? channel.adapter.render(reply, msg.replyTo) : [])];
    const at = now();
    await this.deps.store.completeInbound(
      row,
      {
        conversationId: response.conversation_id,
        replyTo: JSON.stringify(msg.replyTo),
        options: reply.options.length ? JSON.stringify(reply.options) : null,
        now: at,
      },
      calls.length
        ? {
            tenantId: channel.row.tenant_id,
            agentId: channel.row.agent_id,
            channelId: row.channel_id,
            kind,
            conversationId: response.conversation_id,
            userKey: row.user_key,
            source: 'reply',
            sourceKey: `in:${row.id}`,
            calls,
            now: at,
          }
        : null,
    );
    return calls.length > 0;
  }

  /**
   * A person's reply to a conversation that came through a channel (an escalation answered in
   * the API or the console): it goes out through the channel like the agent's replies.
   */
  async operatorReply(c: Conversation, turn: TurnRow): Promise<void> {
    if (!c.channel || !isChannelKind(c.channel.kind) || !c.channel.origin || !c.userId) return;
    const row = await this.deps.store.byId(c.channel.origin);
    if (!row) return;
    const userKey = c.userId.slice(c.channel.kind.length + 1);
    const user = await this.deps.store.user(row.id, userKey);
    const to = JSON.parse(user?.reply_to ?? 'null') as Record<string, string> | null;
    if (!to) return;
    const calls = ADAPTERS[c.channel.kind].render({ text: turn.message, options: [] }, to);
    if (!calls.length) return;
    await this.deps.store.enqueue({
      tenantId: row.tenant_id,
      agentId: row.agent_id,
      channelId: row.id,
      kind: row.kind,
      conversationId: c.id,
      userKey,
      source: 'operator',
      sourceKey: `op:${c.id}:${turn.idx}`,
      calls,
      now: iso(this.deps.clock.now()),
    });
    this.kick();
  }

  /** One attempt at a delivery: its remaining calls in order, stopping at the first that fails. */
  private async deliver(row: OutboxRow): Promise<void> {
    const clock = this.deps.clock;
    const channelRow = await this.deps.store.byId(row.channel_id);
    const channel = channelRow ? this.open(channelRow) : null;
    const attempt = row.attempts + 1;
    const ids = JSON.parse(row.provider_ids) as string[];
    const finish = async (status: 'sent' | 'failed' | 'refused', update: Record<string, unknown>, log: Parameters<ChannelStore['recordAttempt']>[2]) => {
      await this.deps.store.recordAttempt(row, attempt, log, { ...update, status, next_attempt_at: null, calls: null });
      this.deps.metrics.channelDelivery(row.kind, status);
      const recorded: AuditedDelivery = {
        id: row.id,
        tenant_id: row.tenant_id,
        kind: row.kind as ChannelKind,
        conversation_id: row.conversation_id,
        source: row.source,
        status,
        call_count: row.call_count,
        calls_done: (update.calls_done as number | undefined) ?? row.calls_done,
        attempts: attempt,
        next_attempt_at: null,
        created_at: row.created_at,
        sent_at: (update.sent_at as string | undefined) ?? null,
        latency_ms: (update.latency_ms as number | undefined) ?? null,
        provider_ids: (update.provider_ids as string | undefined) ?? row.provider_ids,
        last_status: (update.last_status as number | null | undefined) ?? null,
        last_error: (update.last_error as string | null | undefined) ?? null,
        audited: false,
      };
      await this.audit(row.id, recorded).catch((err: unknown) =>
        this.deps.logger.warn({ err, delivery: row.id }, 'a channel delivery could not be audited yet'),
      );
    };
    if (!channel) {
      await finish('failed', { last_error: 'channel removed' }, []);
      return;
    }
    if (channel.row.status === 'paused') {
      await this.deps.store.postpone(row.id, iso(new Date(clock.now().getTime() + 60_000)));
      return;
    }
    const { adapter, creds, kind } = channel;
    if (adapter.replyWindowHours) {
      const user = await this.deps.store.user(row.channel_id, row.user_key);
      const last = user?.last_inbound_at ? Date.parse(user.last_inbound_at) : 0;
      if (clock.now().getTime() - last > adapter.replyWindowHours * 3600_000) {
        const error = `outside ${kind}'s ${adapter.replyWindowHours}-hour window: the user last wrote ${user?.last_inbound_at ?? 'never'}`;
        await finish('refused', { last_error: error }, []);
        this.deps.logger.info({ tenant: row.tenant_id, channel: kind, delivery: row.id }, 'channel reply refused: the reply window is closed');
        return;
      }
    }
    const calls = JSON.parse(row.calls ?? '[]') as { method: string; body: Record<string, unknown> }[];
    const log: Parameters<ChannelStore['recordAttempt']>[2] = [];
    let done = row.calls_done;
    let last: CallResult = { ok: true, status: null };
    const http = this.http(kind);
    const stopAt = Math.min(calls.length, done + MAX_CALLS_PER_ATTEMPT);
    while (done < stopAt) {
      const started = performance.now();
      const at = iso(clock.now());
      last = await adapter.send(calls[done], creds, http).catch((e: unknown): CallResult => {
        const err = e as Error;
        return { ok: false, status: null, error: err.name === 'TimeoutError' ? 'timed out' : `unreachable (${err.name})` };
      });
      log.push({
        call: done,
        method: calls[done].method,
        at,
        status: last.status,
        error: last.ok ? null : (last.error ?? 'failed'),
        durationMs: Math.round((performance.now() - started) * 100) / 100,
      });
      if (!last.ok) break;
      if (last.providerId) ids.push(last.providerId);
      done++;
    }
    const common = { calls_done: done, provider_ids: JSON.stringify(ids), last_status: last.status, last_error: last.ok ? null : (last.error ?? 'failed') };
    if (done >= calls.length) {
      const sentAt = clock.now();
      await finish('sent', { ...common, sent_at: iso(sentAt), latency_ms: Math.max(0, sentAt.getTime() - Date.parse(row.created_at)) }, log);
      return;
    }
    if (last.ok) {
      // More calls than one attempt makes: the rest go on at once.
      await this.deps.store.recordAttempt(row, attempt, log, { ...common, next_attempt_at: iso(clock.now()) });
      return;
    }
    if (last.refused) return finish('refused', common, log);
    if (last.permanent || attempt > BACKOFF_SECONDS.length) return finish('failed', common, log);
    const wait = Math.max(BACKOFF_SECONDS[attempt - 1], Math.min(MAX_RETRY_AFTER_S, last.retryAfter ?? 0));
    await this.deps.store.recordAttempt(row, attempt, log, { ...common, next_attempt_at: iso(new Date(clock.now().getTime() + wait * 1000)) });
    this.deps.metrics.channelDelivery(row.kind, 'retried');
    this.deps.logger.info(
      { tenant: row.tenant_id, channel: kind, delivery: row.id, attempt, status: last.status, error: last.error, retry_in_s: wait },
      'channel delivery retried',
    );
  }

  /** The finished delivery's entry in its conversation's audit log (once): as just recorded, or read back. */
  private async audit(id: number, known?: AuditedDelivery): Promise<void> {
    const d = known ?? (await this.deps.store.delivery(id));
    if (!d || d.audited || d.status === 'pending') return;
    const draft: AuditDraft = {
      type: 'channel_delivery',
      turnIndex: null,
      timestamp: iso(this.deps.clock.now()),
      durationMs: d.latency_ms === null ? null : Number(d.latency_ms),
      data: {
        channel: d.kind,
        delivery_id: String(d.id),
        source: d.source,
        status: d.status,
        attempts: Number(d.attempts),
        calls: Number(d.call_count),
        latency_ms: d.latency_ms === null ? null : Number(d.latency_ms),
        provider_message_ids: JSON.parse(d.provider_ids) as string[],
        error: d.last_error ?? null,
      },
    };
    await this.deps.lifecycle.appendAudit(d.tenant_id, d.conversation_id, draft, `channel-delivery-${d.id}`);
    await this.deps.store.markAudited(id);
  }
}

/**
 * The message a turn gets: a button's option value (or the n-th option offered last), a reply
 * of a number or a label of the options offered last, else the words as written.
 */
export function chosen(msg: Pick<InboundMessage, 'text' | 'choice'>, offered: { label: string; value: string }[]): string {
  const byNumber = (s: string) => {
    const m = /^#?(\d{1,3})\.?$/.exec(s.trim());
    return m ? offered[Number(m[1]) - 1]?.value : undefined;
  };
  if (msg.choice !== undefined) return (msg.choice.startsWith('#') ? byNumber(msg.choice) : msg.choice) ?? msg.text;
  const text = msg.text.trim();
  return byNumber(text) ?? offered.find((o) => o.label.toLowerCase() === text.toLowerCase())?.value ?? text;
}
