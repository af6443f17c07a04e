// Channel users' waiting messages: a worker takes a user (a lease on the user's row, so one
// replica at a time) and runs their messages oldest first through the converse service like any
// other caller, queueing each reply on the outbox. At most `total` users at once in a process and
// `perTenant` of one tenant, so one tenant's crowd waits behind itself only.
import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ChannelKind, ConverseResponse } from '@switchboard/contract';
import type { Logger } from 'pino';
import type { InboundMessage } from '../../channels/adapter.js';
import { AppError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { Lane } from '../../lib/lane.js';
import type { ChannelStore, InboundRow } from '../../store/channel-store.js';
import type { AgentService } from '../agents/agent-service.js';
import type { ConversationService } from '../conversations/conversation-service.js';
import type { Metrics } from '../metrics.js';
import { UNREADABLE, type ChannelOpener } from './open.js';

/** Tries of one inbound message whose turn failed for a passing reason (the database, a crash). */
const INBOUND_TRIES = 5;
/** How long a worker holds a user's messages; renewed before each message. */
const LEASE_MS = 120_000;

export interface InboundDeps {
  store: ChannelStore;
  opener: ChannelOpener;
  agents: AgentService;
  conversations: ConversationService;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
}

/** The conversation's user id for a channel user: namespaced by channel. */
const userIdOf = (kind: ChannelKind, userKey: string) => `${kind}:${userKey}`;

export class ChannelInbound {
  private readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  readonly lane: Lane;
  private stopped = false;
  /** A pass left a user waiting for want of room: the next slot to come free starts another. */
  private starved = false;

  constructor(
    private readonly deps: InboundDeps,
    private readonly concurrency: { total: number; perTenant: number },
    /** A reply was queued: the outbox sends it. */
    private readonly queued: () => void,
    /** A user's slot came free while others waited for room: another pass. */
    private readonly again: () => void,
  ) {
    this.lane = new Lane(concurrency);
  }

  /** Waits for the users under way. */
  settled(): Promise<unknown> {
    return Promise.allSettled(this.lane.jobs.values());
  }

  stop(): Promise<unknown> {
    this.stopped = true;
    return this.settled();
  }

  /**
   * Takes users with messages waiting and no lease on them, at most `perTenant` of each tenant,
   * so that every tenant's oldest waiting users are in every pass however long another's queue
   * is; answers how many it started.
   */
  async pass(): Promise<number> {
    if (this.stopped) return 0;
    if (this.lane.free <= 0) {
      this.starved = true;
      return 0;
    }
    const now = this.deps.clock.now();
    const { total, perTenant } = this.concurrency;
    let started = 0;
    for (const u of await this.deps.store.waitingUsers(iso(now), perTenant, total * 4)) {
      const key = `${u.channel_id}:${u.user_key}`;
      if (this.lane.jobs.has(key)) continue;
      if (!this.lane.room(u.tenant_id)) {
        this.starved = true;
        continue;
      }
      if (!(await this.deps.store.lease(u.channel_id, u.user_key, this.owner, iso(now), iso(new Date(now.getTime() + LEASE_MS))))) continue;
      started++;
      this.lane.run(
        key,
        u.tenant_id,
        () =>
          this.drainUser(u.channel_id, u.user_key).catch((err: unknown) =>
            this.deps.logger.warn({ err, tenant: u.tenant_id }, "a channel user's messages failed; they are retried"),
          ),
        () => {
          if (!this.starved) return;
          this.starved = false;
          this.again();
        },
      );
    }
    return started;
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
        if (done) this.queued();
      }
    } finally {
      // After a passing failure the lease is kept until the next try: no process (this one neither) takes the user sooner.
      if (retryIn) await this.deps.store.renew(channelId, userKey, this.owner, iso(new Date(this.deps.clock.now().getTime() + retryIn)));
      else await this.deps.store.release(channelId, userKey, this.owner);
    }
  }

  /**
   * One message: its turn and its reply's delivery, queued. Answers whether a reply was queued,
   * or 'retry' when the message is to be tried again later.
   */
  private async process(row: InboundRow): Promise<boolean | 'retry'> {
    const now = () => iso(this.deps.clock.now());
    const channelRow = await this.deps.store.byId(row.channel_id);
    const channel = channelRow ? this.deps.opener.open(channelRow) : null;
    const msg = JSON.parse(row.payload ?? 'null') as InboundMessage | null;
    if (!channel || !msg) {
      const error = !channelRow || !msg ? 'channel removed' : UNREADABLE;
      await this.deps.store.completeInbound(row, { conversationId: null, replyTo: '{}', options: null, now: now(), error }, null);
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
