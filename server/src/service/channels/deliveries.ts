// Replies to channel users, on the outbox (../outbox/outbox.ts): in order per user, each attempt
// the delivery's remaining provider calls, retried with backoff and the provider's Retry-After,
// every call in the delivery log and each finished delivery in its conversation's audit log.
import { isChannelKind, type ChannelKind } from '@switchboard/contract';
import type { Logger } from 'pino';
import { ADAPTERS } from '../../channels/index.js';
import type { CallResult } from '../../channels/adapter.js';
import type { AuditDraft, Conversation, TurnRow } from '../../domain.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { ChannelStore, OutboxRow } from '../../store/channel-store.js';
import type { LifecycleService } from '../conversations/lifecycle.js';
import type { Metrics } from '../metrics.js';
import { retryAt, type Outcome, type OutboxKind } from '../outbox/outbox.js';
import { UNREADABLE, type ChannelOpener } from './open.js';

/** Seconds to wait after the 1st, 2nd, … failed attempt of a delivery (about 50 minutes in all, then it fails). */
const BACKOFF_SECONDS = [2, 10, 30, 120, 300, 900, 1800];
/** The longest retry-after honoured (a provider asking for more is retried then). */
const MAX_RETRY_AFTER_S = 3600;
/** Provider calls one attempt makes at most (a longer reply goes on in the next, at once). */
const MAX_CALLS_PER_ATTEMPT = 8;
/** How long a paused channel's delivery waits before it is looked at again. */
const PAUSED_RECHECK_MS = 60_000;

/** What a delivery's audit entry says. */
type AuditedDelivery = NonNullable<Awaited<ReturnType<ChannelStore['delivery']>>>;
type CallLog = Parameters<ChannelStore['recordAttempt']>[2];

export interface DeliveryDeps {
  store: ChannelStore;
  opener: ChannelOpener;
  lifecycle: LifecycleService;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
}

export class ChannelDeliveries implements OutboxKind<number, OutboxRow> {
  readonly name = 'channel_deliveries';
  /** How long a claimed delivery is held: its calls' time-outs and some. */
  readonly leaseMs: number;

  constructor(
    private readonly deps: DeliveryDeps,
    timeoutMs: number,
  ) {
    this.leaseMs = timeoutMs * (MAX_CALLS_PER_ATTEMPT + 1) + 30_000;
  }

  due(now: string, perTenant: number, limit: number) {
    return this.deps.store.dueDeliveries(now, perTenant, limit);
  }

  claim(ids: number[], now: string, until: string) {
    return this.deps.store.claim(ids, now, until);
  }

  /**
   * A person's reply to a conversation that came through a channel (an escalation answered in
   * the API or the console), queued to go out through the channel like the agent's replies.
   * Answers whether one was queued.
   */
  async queueOperatorReply(c: Conversation, turn: TurnRow): Promise<boolean> {
    if (!c.channel || !isChannelKind(c.channel.kind) || !c.channel.origin || !c.userId) return false;
    const row = await this.deps.store.byId(c.channel.origin);
    if (!row) return false;
    const userKey = c.userId.slice(c.channel.kind.length + 1);
    const user = await this.deps.store.user(row.id, userKey);
    const to = JSON.parse(user?.reply_to ?? 'null') as Record<string, string> | null;
    if (!to) return false;
    const calls = ADAPTERS[c.channel.kind].render({ text: turn.message, options: [] }, to);
    if (!calls.length) return false;
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
    return true;
  }

  /** One attempt at a delivery: its remaining calls in order, stopping at the first that fails. */
  async attempt(row: OutboxRow): Promise<Outcome> {
    const { clock, store } = this.deps;
    const channelRow = await store.byId(row.channel_id);
    const channel = channelRow ? this.deps.opener.open(channelRow) : null;
    const attempt = row.attempts + 1;
    const ids = JSON.parse(row.provider_ids) as string[];
    const finish = async (status: 'sent' | 'failed' | 'refused', update: Record<string, unknown>, log: CallLog): Promise<Outcome> => {
      await store.recordAttempt(row, attempt, log, { ...update, status, next_attempt_at: null, calls: null });
      this.deps.metrics.channelDelivery(row.kind, status);
      await this.audit(row.id, {
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
      }).catch((err: unknown) => this.deps.logger.warn({ err, delivery: row.id }, 'a channel delivery could not be audited yet'));
      return status === 'sent' ? 'delivered' : status;
    };
    if (!channel) return finish('failed', { last_error: channelRow ? UNREADABLE : 'channel removed' }, []);
    if (channel.row.status === 'paused') {
      await store.postpone(row.id, iso(new Date(clock.now().getTime() + PAUSED_RECHECK_MS)));
      return 'postponed';
    }
    const { adapter, creds, kind } = channel;
    if (adapter.replyWindowHours) {
      const user = await store.user(row.channel_id, row.user_key);
      const last = user?.last_inbound_at ? Date.parse(user.last_inbound_at) : 0;
      if (clock.now().getTime() - last > adapter.replyWindowHours * 3600_000) {
        const error = `outside ${kind}'s ${adapter.replyWindowHours}-hour window: the user last wrote ${user?.last_inbound_at ?? 'never'}`;
        this.deps.logger.info({ tenant: row.tenant_id, channel: kind, delivery: row.id }, 'channel reply refused: the reply window is closed');
        return finish('refused', { last_error: error }, []);
      }
    }
    const calls = JSON.parse(row.calls ?? '[]') as { method: string; body: Record<string, unknown> }[];
    const log: CallLog = [];
    let done = row.calls_done;
    let last: CallResult = { ok: true, status: null };
    const http = this.deps.opener.http(kind);
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
      return finish('sent', { ...common, sent_at: iso(sentAt), latency_ms: Math.max(0, sentAt.getTime() - Date.parse(row.created_at)) }, log);
    }
    if (last.ok) {
      // More calls than one attempt makes: the rest go on at once.
      await store.recordAttempt(row, attempt, log, { ...common, next_attempt_at: iso(clock.now()) });
      return 'again';
    }
    if (last.refused) return finish('refused', common, log);
    const next = last.permanent ? null : retryAt(clock.now(), attempt, BACKOFF_SECONDS, last.retryAfter, MAX_RETRY_AFTER_S);
    if (!next) return finish('failed', common, log);
    await store.recordAttempt(row, attempt, log, { ...common, next_attempt_at: iso(next) });
    this.deps.metrics.channelDelivery(row.kind, 'retried');
    this.deps.logger.info(
      {
        tenant: row.tenant_id,
        channel: kind,
        delivery: row.id,
        attempt,
        status: last.status,
        error: last.error,
        retry_in_s: Math.round((next.getTime() - clock.now().getTime()) / 1000),
      },
      'channel delivery retried',
    );
    return 'retried';
  }

  /** Finished deliveries whose audit entry a process that died did not write (finished before `before`). */
  async auditLeftovers(before: string): Promise<void> {
    for (const r of await this.deps.store.unaudited(before, 20)) await this.audit(Number(r.id)).catch(() => undefined);
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
