// The web chat widget's side of the service: which publishable key, page and visitor a request
// comes from, and what they may do. A key names its tenant, agents and origins; a visitor is the
// browser's random id (kept as a hash) or, when the site's server signed it, the site's user id;
// a conversation answers only to the visitor who started it. Every limit assumes the key is in
// hostile hands, since it is public: per key, per visitor and per address rates, new
// conversations per visitor per hour, open event streams per visitor.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { PassThrough } from 'node:stream';
import type { ConverseResponse, LocalizedText, WidgetConversation, WidgetSettings } from '@switchboard/contract';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { ForbiddenError, InputError, NotFoundError, RateLimitedError } from '../errors.js';
import type { AgentService } from './agent-service.js';
import type { ConversationService } from './conversation-service.js';
import type { EventStreams } from './event-streams.js';
import type { KeyService, PublishableKey } from './keys.js';
import type { SecretService } from './secrets.js';

/** The tenant secret (or operator secret granted to the tenant) that signs its users' ids. */
const IDENTITY_SECRET = 'WIDGET_IDENTITY_SECRET';

export interface WidgetLimits {
  /** Requests a minute, per publishable key, per visitor and per client address. */
  keyPerMinute: number;
  visitorPerMinute: number;
  addressPerMinute: number;
  /** Conversations one visitor may start in an hour. */
  newConversationsPerHour: number;
  /** Event streams one visitor may hold open in one process. */
  streamsPerVisitor: number;
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
  visitorId?: string;
  userIdClaim?: string;
  userHash?: string;
  address: string;
  requestId: string;
  /** The key as the request's CORS check already read it, if it did (the same `key`). */
  known?: { presented: string; key: PublishableKey | null };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

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
  private readonly newConversations: RateLimiterAbstract;
  private readonly openStreams = new Map<string, number>();

  constructor(
    private readonly deps: {
      keys: KeyService;
      agents: AgentService;
      conversations: ConversationService;
      streams: EventStreams;
      secrets: Pick<SecretService, 'forTenant'>;
      logger: Logger;
    },
    readonly limits: WidgetLimits,
  ) {
    // Counted in each process (N replicas allow N times as much): a bound on what one key,
    // visitor or address can make one process do, which is what protects the other tenants.
    const limiter = (prefix: string, points: number, duration: number) => new RateLimiterMemory({ keyPrefix: prefix, points, duration });
    this.perKey = limiter('sb:widget:key', limits.keyPerMinute, 60);
    this.perVisitor = limiter('sb:widget:visitor', limits.visitorPerMinute, 60);
    this.perAddress = limiter('sb:widget:address', limits.addressPerMinute, 60);
    this.newConversations = limiter('sb:widget:new', limits.newConversationsPerHour, 3600);
  }

  /**
   * The key's grant for a page of `origin` talking to `slug`: 404 for a key that is unknown or
   * revoked, 403 for a page of another origin (or none: a publishable key works from pages only)
   * or an agent the key does not name. The origin is checked here, not only by the browser.
   */
  async admit(r: Pick<WidgetRequest, 'key' | 'origin' | 'slug' | 'address' | 'known'>): Promise<{ key: PublishableKey; origin: string }> {
    await this.consume(this.perAddress, r.address, 'from this address');
    const key = r.known?.presented === r.key ? r.known.key : await this.deps.keys.publishable(r.key);
    if (!key) throw new NotFoundError('not_found', 'No such publishable key (it may have been revoked)');
    await this.consume(this.perKey, key.keyId, 'for this key');
    const origin = r.origin?.toLowerCase();
    if (!origin || !key.origins.includes(origin)) {
      throw new ForbiddenError(`This key does not allow pages of ${origin ?? 'no origin'}: add the origin to the key's allowed origins`);
    }
    if (!key.agents.includes(r.slug)) throw new ForbiddenError(`This key does not name the agent ${r.slug}`);
    return { key, origin };
  }

  /** The visitor behind a request: a verified user id (its hash checked), else the browser's anonymous id. */
  async caller(r: WidgetRequest): Promise<WidgetCaller> {
    const { key, origin } = await this.admit(r);
    if (!r.visitorId) throw new InputError('A visitor id is required', [{ path: 'header.x-visitor-id', message: 'required' }]);
    let userId = `anonymous:${sha256(`${key.tenantId}\n${r.visitorId}`).slice(0, 32)}`;
    if (r.userIdClaim !== undefined || r.userHash !== undefined) {
      if (r.userIdClaim === undefined) throw new ForbiddenError('x-user-hash without x-user-id');
      const secret = (await this.deps.secrets.forTenant(key.tenantId, [IDENTITY_SECRET]))[IDENTITY_SECRET];
      if (!secret) throw new ForbiddenError(`Identity verification is not set up for this tenant: store its secret as ${IDENTITY_SECRET}`);
      if (!identityVerified(secret, r.userIdClaim, r.userHash)) throw new ForbiddenError('x-user-hash is not the signature of x-user-id');
      userId = r.userIdClaim;
    }
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
    if (isNew) await this.consume(this.newConversations, `${c.key.tenantId}\n${c.userId}`, 'new conversations for this visitor this hour');
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
    const record = await this.deps.conversations.ownedBy(c.key.tenantId, slug, id, c.userId);
    const turns = await this.deps.conversations.turnsOf(record);
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
      })),
    };
  }

  /** The conversation's events for its own visitor, at most `streamsPerVisitor` at once in this process. */
  async events(c: WidgetCaller, slug: string, id: string, lastEventId: string | null, signal: AbortSignal): Promise<PassThrough> {
    const conversation = await this.deps.conversations.ownedBy(c.key.tenantId, slug, id, c.userId);
    const who = `${c.key.tenantId}\n${c.userId}`;
    const open = this.openStreams.get(who) ?? 0;
    if (open >= this.limits.streamsPerVisitor) {
      throw new RateLimitedError(5, `Too many open event streams for this visitor (at most ${this.limits.streamsPerVisitor}); close one first`);
    }
    const stream = await this.deps.streams.open({
      tenantId: c.key.tenantId,
      conversationId: conversation.id,
      createdAt: conversation.createdAt,
      lastEventId,
      keyId: c.key.keyId,
      signal,
    });
    this.openStreams.set(who, open + 1);
    stream.once('close', () => {
      const left = (this.openStreams.get(who) ?? 1) - 1;
      if (left > 0) this.openStreams.set(who, left);
      else this.openStreams.delete(who);
    });
    return stream;
  }

  private async consume(limiter: RateLimiterAbstract, key: string, what: string): Promise<void> {
    try {
      await limiter.consume(key);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      this.deps.logger.info({ limit: what }, 'widget limit reached');
      throw new RateLimitedError(Math.max(1, Math.ceil(e.msBeforeNext / 1000)), `Too many requests ${what}; retry later`);
    }
  }
}
