// The web chat widget's side of the service: which publishable key, page and visitor a request
// comes from, and what they may do. A key names its tenant, agents and origins; a visitor is the
// random id inside a visitor token this service signed for the browser (bound to the key,
// expiring, renewed), or, when the site's server signed it, the site's user id; a conversation
// answers only to the visitor who started it. Every limit assumes the key is in hostile hands,
// since it is public: new visitors per address and per key, per key, per visitor and per address
// rates, new conversations per visitor and per key each hour, open event streams per visitor and
// per key.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { PassThrough } from 'node:stream';
import type { ConverseResponse, LocalizedText, WidgetConversation, WidgetSettings } from '@switchboard/contract';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { ForbiddenError, InputError, NotFoundError, RateLimitedError, VisitorTokenError } from '../errors.js';
import { iso, type Clock } from '../lib/clock.js';
import type { AgentService } from './agents/agent-service.js';
import type { ConversationService } from './conversations/conversation-service.js';
import type { ConversationReads } from './conversations/conversation-reads.js';
import type { EventStreams } from './conversations/event-streams.js';
import type { KeyService, PublishableKey } from './keys.js';
import { mustHaveRoom, spend, spendQuietly, type Limits } from './limits.js';
import type { SecretService } from './secrets.js';

/** The tenant secret (or operator secret granted to the tenant) that signs its users' ids. */
const IDENTITY_SECRET = 'WIDGET_IDENTITY_SECRET';
/** The service's own secret that signs visitor tokens (KeyService.serviceSecret). */
const TOKEN_SECRET = 'widget-visitor-tokens';
/** How long after its expiry a visitor token may still be renewed for the same visitor. */
const RENEW_DAYS = 30;
const TOKEN = /^v1\.([A-Za-z0-9_-]{22})\.(\d{10})\.([A-Za-z0-9_-]{43})$/;

export interface WidgetLimits {
  /** Requests a minute, per publishable key, per visitor and per client address. */
  keyPerMinute: number;
  visitorPerMinute: number;
  addressPerMinute: number;
  /** Requests a minute from one client address that name no live publishable key. */
  unknownKeyPerMinute: number;
  /** New visitors (visitor tokens not renewed) one client address may get in an hour, and one key in a minute. */
  newVisitorsPerAddressPerHour: number;
  keyNewVisitorsPerMinute: number;
  /** How long a visitor token is good for, in hours, before it must be renewed. */
  visitorTokenHours: number;
  /** Conversations one visitor, and all visitors of one key, may start in an hour. */
  newConversationsPerHour: number;
  keyNewConversationsPerHour: number;
  /** Event streams one visitor, and all visitors of one key, may hold open in one process. */
  streamsPerVisitor: number;
  streamsPerKey: number;
  /** The longest message a visitor may send, in characters. */
  maxMessageChars: number;
}

/** Who is asking: the key's grant, the page's origin, and the visitor as conversations record them. */
export interface WidgetCaller {
  key: PublishableKey;
  origin: string;
  /** `user_id` of the visitor's conversations: the verified user id, or `anonymous:<hash of the browser's id>`. */
  userId: string;
  address: string;
  requestId: string;
}

export interface WidgetRequest {
  key: string;
  origin: string | undefined;
  slug: string;
  visitorToken?: string;
  userIdClaim?: string;
  userHash?: string;
  address: string;
  requestId: string;
  /** The key as the request's CORS check already read it, if it did (the same `key`). */
  known?: { presented: string; key: PublishableKey | null };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The `user_id` of an anonymous visitor's conversations: a hash, so that the token's id is not shown to operators. */
const anonymousId = (key: PublishableKey, visitorId: string) => `anonymous:${sha256(`${key.tenantId}\n${visitorId}`).slice(0, 32)}`;

const tokenMac = (secret: Buffer, keyId: string, visitorId: string, expires: number) =>
  createHmac('sha256', secret).update(`widget-visitor\n${keyId}\n${visitorId}\n${expires}`).digest();

function signToken(secret: Buffer, keyId: string, visitorId: string, expires: number): string {
  return `v1.${visitorId}.${expires}.${tokenMac(secret, keyId, visitorId, expires).toString('base64url')}`;
}

/** The visitor and expiry of a token this service signed for `keyId`; null for any other string. */
function readToken(secret: Buffer, keyId: string, token: string): { visitorId: string; expiresMs: number } | null {
  const m = TOKEN.exec(token);
  if (!m) return null;
  const mac = Buffer.from(m[3], 'base64url');
  const expected = tokenMac(secret, keyId, m[1], Number(m[2]));
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) return null;
  return { visitorId: m[1], expiresMs: Number(m[2]) * 1000 };
}

/** The text of a greeting in `language` (or its base language), else the first one written. */
function localized(text: LocalizedText | undefined, language: string | undefined): string | null {
  if (text === undefined) return null;
  if (typeof text === 'string') return text;
  const l = language?.toLowerCase();
  const entries = Object.entries(text);
  const exact = entries.find(([k]) => k.toLowerCase() === l) ?? entries.find(([k]) => k.toLowerCase() === l?.split('-')[0]);
  const found = exact ?? entries.at(0);
  return found ? found[1] : null;
}

/** Whether `hash` is the HMAC-SHA-256 of `userId` under `secret`, compared in constant time. */
export function identityVerified(secret: string | undefined, userId: string, hash: string | undefined): boolean {
  if (!secret || !hash || !/^[0-9a-f]{64}$/.test(hash)) return false;
  const expected = createHmac('sha256', secret).update(userId, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(hash, 'hex'));
}

export class WidgetService {
  private readonly perKey: RateLimiterAbstract;
  private readonly perVisitor: RateLimiterAbstract;
  private readonly perAddress: RateLimiterAbstract;
  private readonly unknownKeys: RateLimiterAbstract;
  private readonly addressNewVisitors: RateLimiterAbstract;
  private readonly keyNewVisitors: RateLimiterAbstract;
  private readonly newConversations: RateLimiterAbstract;
  private readonly keyNewConversations: RateLimiterAbstract;
  /** Each visitor's open event streams in this process, oldest first, each with what ends it. */
  private readonly openStreams = new Map<string, { stream: PassThrough; end: AbortController }[]>();

  constructor(
    private readonly deps: {
      keys: KeyService;
      agents: AgentService;
      conversations: ConversationService;
      conversationReads: ConversationReads;
      streams: EventStreams;
      secrets: Pick<SecretService, 'forTenant'>;
      limits: Limits;
      clock: Clock;
      logger: Logger;
    },
    readonly limits: WidgetLimits,
  ) {
    // Shared by every replica through Redis when REDIS_URL is set, else counted in each process.
    const limiter = (name: string, points: number, seconds: number) => deps.limits.limiter({ name: `widget:${name}`, points, seconds });
    this.perKey = limiter('key', limits.keyPerMinute, 60);
    this.perVisitor = limiter('visitor', limits.visitorPerMinute, 60);
    this.perAddress = limiter('address', limits.addressPerMinute, 60);
    this.unknownKeys = limiter('unknown', limits.unknownKeyPerMinute, 60);
    this.addressNewVisitors = limiter('address-visitors', limits.newVisitorsPerAddressPerHour, 3600);
    this.keyNewVisitors = limiter('key-visitors', limits.keyNewVisitorsPerMinute, 60);
    this.newConversations = limiter('new', limits.newConversationsPerHour, 3600);
    this.keyNewConversations = limiter('key-new', limits.keyNewConversationsPerHour, 3600);
  }

  /**
   * The live publishable key `presented`, or null. A client address has a budget of its own for
   * requests that name no live key, spent only by those: made-up keys cost their sender, never
   * the visitors of real ones, and past the budget are refused before any lookup.
   */
  async key(presented: string, address: string): Promise<PublishableKey | null> {
    await mustHaveRoom(this.unknownKeys, address, 'Too many requests with unknown publishable keys from this address; retry later');
    const key = await this.deps.keys.publishable(presented);
    if (!key) await spendQuietly(this.unknownKeys, address);
    return key;
  }

  /**
   * The key's grant for a page of `origin` talking to `slug`: 404 for a key that is unknown or
   * revoked, 403 for a page of another origin (or none: a publishable key works from pages only)
   * or an agent the key does not name. The origin is checked here, not only by the browser.
   */
  async admit(r: Pick<WidgetRequest, 'key' | 'origin' | 'slug' | 'address' | 'known'>): Promise<{ key: PublishableKey; origin: string }> {
    const key = r.known?.presented === r.key ? r.known.key : await this.key(r.key, r.address);
    if (!key) throw new NotFoundError('not_found', 'No such publishable key (it may have been revoked)');
    await this.consume(this.perAddress, r.address, 'from this address');
    await this.consume(this.perKey, key.keyId, 'for this key');
    const origin = r.origin?.toLowerCase();
    if (!origin || !key.origins.includes(origin)) {
      throw new ForbiddenError(`This key does not allow pages of ${origin ?? 'no origin'}: add the origin to the key's allowed origins`);
    }
    if (!key.agents.includes(r.slug)) throw new ForbiddenError(`This key does not name the agent ${r.slug}`);
    return { key, origin };
  }

  /**
   * A visitor token for the browser: the renewal of `held` when it is this key's, signed here and
   * expired less than RENEW_DAYS ago (the same visitor, spending its own budget), else a new
   * visitor's, which spends the address's and the key's budgets of new visitors.
   */
  async visitorToken(
    r: Pick<WidgetRequest, 'key' | 'origin' | 'slug' | 'address' | 'known' | 'userIdClaim' | 'userHash'>,
    held: string | undefined,
  ): Promise<{ visitor_token: string; expires_at: string; renewed: boolean }> {
    const { key } = await this.admit(r);
    // A signed-in user's hash is checked here too: the widget asks for its token on load, so a
    // page with a wrong hash hears so then, not after the visitor's first message.
    await this.verifiedUser(key, r);
    const secret = await this.deps.keys.serviceSecret(TOKEN_SECRET);
    const now = this.deps.clock.now().getTime();
    const read = held ? readToken(secret, key.keyId, held) : null;
    const renewed = read !== null && read.expiresMs > now - RENEW_DAYS * 86_400_000;
    let visitorId: string;
    if (renewed) {
      visitorId = read.visitorId;
      await this.consume(this.perVisitor, `${key.tenantId}\n${anonymousId(key, visitorId)}`, 'for this visitor');
    } else {
      await this.consume(this.addressNewVisitors, r.address, 'new visitors from this address this hour');
      await this.consume(this.keyNewVisitors, key.keyId, 'new visitors for this key');
      visitorId = randomBytes(16).toString('base64url');
    }
    const expires = Math.floor(now / 1000) + this.limits.visitorTokenHours * 3600;
    return { visitor_token: signToken(secret, key.keyId, visitorId, expires), expires_at: iso(new Date(expires * 1000)), renewed };
  }

  /** The signed-in user a request claims, its hash checked (403 when it is not the signature); null when it claims none. */
  private async verifiedUser(key: PublishableKey, r: Pick<WidgetRequest, 'userIdClaim' | 'userHash'>): Promise<string | null> {
    if (r.userIdClaim === undefined && r.userHash === undefined) return null;
    if (r.userIdClaim === undefined) throw new ForbiddenError('x-user-hash without x-user-id');
    const secret = (await this.deps.secrets.forTenant(key.tenantId, [IDENTITY_SECRET]))[IDENTITY_SECRET];
    if (!secret) throw new ForbiddenError(`Identity verification is not set up for this tenant: store its secret as ${IDENTITY_SECRET}`);
    if (!identityVerified(secret, r.userIdClaim, r.userHash)) throw new ForbiddenError('x-user-hash is not the signature of x-user-id');
    return r.userIdClaim;
  }

  /** The visitor behind a request: a verified user id (its hash checked), else the anonymous visitor its token names. */
  async caller(r: WidgetRequest): Promise<WidgetCaller> {
    const { key, origin } = await this.admit(r);
    if (!r.visitorToken) throw new InputError('A visitor token is required', [{ path: 'header.x-visitor-token', message: 'required' }]);
    const token = readToken(await this.deps.keys.serviceSecret(TOKEN_SECRET), key.keyId, r.visitorToken);
    if (!token) throw new VisitorTokenError('The visitor token is not one this service signed for this key: ask POST …/visitor for one');
    if (token.expiresMs <= this.deps.clock.now().getTime()) throw new VisitorTokenError('The visitor token has expired: renew it with POST …/visitor');
    const userId = (await this.verifiedUser(key, r)) ?? anonymousId(key, token.visitorId);
    await this.consume(this.perVisitor, `${key.tenantId}\n${userId}`, 'for this visitor');
    return { key, origin, userId, address: r.address, requestId: r.requestId };
  }

  async settings(key: PublishableKey, slug: string, language: string | undefined): Promise<WidgetSettings> {
    const agent = await this.deps.agents.get(key.tenantId, slug);
    const definition = agent.definition;
    const w = definition.widget ?? {};
    return {
      agent: slug,
      title: w.title ?? definition.name,
      greeting: localized(w.greeting, language ?? w.languages?.[0]),
      accent: w.accent ?? '#1f6feb',
      languages: w.languages ?? [],
    };
  }

  async converse(
    c: WidgetCaller,
    slug: string,
    body: { message: string; conversation_id?: string; language?: string; page_url?: string },
    onDelta?: (text: string) => void,
  ): Promise<ConverseResponse> {
    if (Array.from(body.message).length > this.limits.maxMessageChars) {
      throw new InputError('The message is too long', [{ path: 'message', message: `must be at most ${this.limits.maxMessageChars} characters` }]);
    }
    const isNew = body.conversation_id === undefined;
    if (isNew) {
      await this.consume(this.newConversations, `${c.key.tenantId}\n${c.userId}`, 'new conversations for this visitor this hour');
      await this.consume(this.keyNewConversations, c.key.keyId, 'new conversations for this key this hour');
    }
    const context = {
      version: 'v1' as const,
      context: {
        identity: { user_id: c.userId },
        ...(body.language ? { preferences: { language: body.language } } : {}),
      },
    };
    return this.deps.conversations.converse({
      tenantId: c.key.tenantId,
      slug,
      // A continuing turn carries the visitor's identity again: the conversation must be theirs.
      body: { message: body.message, conversation_id: body.conversation_id, context: isNew || body.language ? context : undefined },
      userIdHeader: c.userId,
      requestId: c.requestId,
      // Every turn names its channel: a continuing turn reaches only a web conversation (of this
      // visitor, by the user id above), never the same user's conversation of the API or a channel.
      channel: { kind: 'web', origin: c.origin, pageUrl: body.page_url ?? null },
      onDelta,
    });
  }

  async conversation(c: WidgetCaller, slug: string, id: string): Promise<WidgetConversation> {
    const record = await this.deps.conversationReads.ownedBy(c.key.tenantId, slug, id, c.userId);
    const turns = await this.deps.conversationReads.turnsOf(record);
    return {
      conversation_id: record.id,
      status: record.status,
      awaiting_input: record.awaitingInput,
      turns: turns.map((t) => ({
        index: t.idx,
        role: t.role,
        message: t.message,
        timestamp: t.timestamp,
        ...(t.role === 'agent' ? { options: t.options ?? [] } : {}),
        ...(t.author ? { author: t.author } : {}),
        ...(t.citations?.length ? { citations: t.citations } : {}),
      })),
    };
  }

  /**
   * The conversation's events for its own visitor, at most `streamsPerVisitor` at once in this
   * process (a visitor's newest stream ends its oldest: a page reloaded opens its new stream
   * before the server has seen the old one go), and `streamsPerKey` for all the key's visitors:
   * the key's own count, apart from the tenant's (SSE_MAX_PER_TENANT), so that a widget never
   * starves the tenant's console and API.
   */
  async events(c: WidgetCaller, slug: string, id: string, lastEventId: string | null, signal: AbortSignal): Promise<PassThrough> {
    const conversation = await this.deps.conversationReads.ownedBy(c.key.tenantId, slug, id, c.userId);
    const who = `${c.key.tenantId}\n${c.userId}`;
    const open = this.openStreams.get(who) ?? [];
    // Ending one frees its place in every count at once (the event streams' own close).
    while (open.length >= this.limits.streamsPerVisitor) open.shift()!.end.abort();
    const end = new AbortController();
    const stream = await this.deps.streams.open({
      tenantId: c.key.tenantId,
      conversationId: conversation.id,
      createdAt: conversation.createdAt,
      lastEventId,
      keyId: c.key.keyId,
      pool: { name: `widget:${c.key.keyId}`, limit: this.limits.streamsPerKey, what: 'for this key' },
      signal: AbortSignal.any([signal, end.signal]),
    });
    const mine = this.openStreams.get(who) ?? [];
    mine.push({ stream, end });
    this.openStreams.set(who, mine);
    stream.once('close', () => {
      const left = (this.openStreams.get(who) ?? []).filter((x) => x.stream !== stream);
      if (left.length) this.openStreams.set(who, left);
      else this.openStreams.delete(who);
    });
    return stream;
  }

  private async consume(limiter: RateLimiterAbstract, key: string, what: string): Promise<void> {
    try {
      await spend(limiter, key, `Too many requests ${what}; retry later`);
    } catch (e) {
      if (e instanceof RateLimitedError) this.deps.logger.info({ limit: what }, 'widget limit reached');
      throw e;
    }
  }
}
