// Channels, their inbound messages, their users and their outbox. Every read an API caller makes
// filters by tenant_id; the workers read by channel id, which names its tenant.
import type { ChannelKind } from '@switchboard/contract';
import type { Knex } from 'knex';
import { decodeCursor, encodeCursor, isTimeAndId } from '../lib/cursor.js';
import type { Database } from './db.js';
import { claimDue, dueInOrder, type OutboxTable } from './outbox-rows.js';

/** Replies go out in order per channel user. */
const CHANNEL_OUTBOX: OutboxTable = { table: 'channel_deliveries', orderKey: ['channel_id', 'user_key'], seq: 'id' };

export interface ChannelRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  kind: string;
  status: 'active' | 'paused';
  credentials: string;
  fields: string;
  webhook_set: boolean | number | null;
  /** The last updates that were not messages, JSON `{ at, reason }[]`, newest first (migration 026). */
  ignored?: string | null;
  created_at: string;
  updated_at: string;
}

export interface InboundRow {
  id: number;
  channel_id: string;
  tenant_id: string;
  user_key: string;
  payload: string | null;
  attempts: number;
  target: string | null;
}

export interface UserRow {
  channel_id: string;
  user_key: string;
  conversation_id: string | null;
  reply_to: string | null;
  options: string | null;
  last_inbound_at: string | null;
}

export interface OutboxRow {
  id: number;
  tenant_id: string;
  channel_id: string;
  kind: string;
  conversation_id: string;
  user_key: string;
  source: 'reply' | 'operator';
  calls: string | null;
  call_count: number;
  calls_done: number;
  attempts: number;
  created_at: string;
  provider_ids: string;
}

export interface DeliveryDraft {
  tenantId: string;
  agentId: string;
  channelId: string;
  kind: string;
  conversationId: string;
  userKey: string;
  source: 'reply' | 'operator';
  sourceKey: string;
  calls: unknown[];
  now: string;
}

export interface AttemptRecord {
  call: number;
  method: string;
  at: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}

const n = (v: unknown) => Number(v);

/** What a claim reads of a delivery, and its numbers as numbers (PostgreSQL returns bigints as strings). */
const OUTBOX_COLUMNS = [
  'id',
  'tenant_id',
  'channel_id',
  'kind',
  'conversation_id',
  'user_key',
  'source',
  'calls',
  'call_count',
  'calls_done',
  'attempts',
  'created_at',
  'provider_ids',
];
const toOutbox = (r: OutboxRow): OutboxRow => ({ ...r, id: n(r.id), call_count: n(r.call_count), calls_done: n(r.calls_done), attempts: n(r.attempts) });

/** A channel_deliveries row as the log reads it (numbers may come back as strings from PostgreSQL). */
interface DeliveryListRow {
  id: number | string;
  kind: ChannelKind;
  conversation_id: string;
  source: 'reply' | 'operator';
  status: 'pending' | 'sent' | 'failed' | 'refused';
  call_count: number | string;
  calls_done: number | string;
  attempts: number | string;
  next_attempt_at: string | null;
  created_at: string;
  sent_at: string | null;
  latency_ms: number | string | null;
  provider_ids: string;
  last_status: number | string | null;
  last_error: string | null;
}

interface AttemptListRow {
  delivery_id: number | string;
  attempt: number | string;
  at: string;
  method: string;
  status: number | string | null;
  error: string | null;
  duration_ms: number | string;
}

export class ChannelStore {
  readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  byId(id: string): Promise<ChannelRow | undefined> {
    return this.knex('channels').where({ id }).first();
  }

  ofAgent(tenantId: string, agentId: string): Promise<ChannelRow[]> {
    return this.knex('channels').where({ tenant_id: tenantId, agent_id: agentId }).orderBy('kind');
  }

  get(tenantId: string, agentId: string, kind: string): Promise<ChannelRow | undefined> {
    return this.knex('channels').where({ tenant_id: tenantId, agent_id: agentId, kind }).first();
  }

  /** Stores a new channel, or replaces the credentials and status of the agent's channel of that kind (its id stays). */
  async put(row: ChannelRow): Promise<ChannelRow> {
    await this.knex('channels')
      .insert(row)
      .onConflict(['tenant_id', 'agent_id', 'kind'])
      .merge(['credentials', 'fields', 'status', 'webhook_set', 'updated_at']);
    return (await this.get(row.tenant_id, row.agent_id, row.kind))!;
  }

  /**
   * Notes an update that was not a message to answer, keeping the newest `keep`. A read and a
   * write, not one statement: two replicas noting at once may keep one of the two, which a
   * diagnostic list can afford (each reason is noted at most once a minute per replica).
   */
  async noteIgnored(id: string, entry: { at: string; reason: string }, keep = 10): Promise<void> {
    const row = await this.knex('channels').where({ id }).first<{ ignored: string | null } | undefined>('ignored');
    if (!row) return;
    const list = parseIgnored(row.ignored).filter((e) => e.reason !== entry.reason);
    await this.knex('channels')
      .where({ id })
      .update({ ignored: JSON.stringify([entry, ...list].slice(0, keep)) });
  }

  async setStatus(id: string, status: 'active' | 'paused', now: string): Promise<void> {
    await this.knex('channels').where({ id }).update({ status, updated_at: now });
  }

  /**
   * Removes a channel with its credentials, its users' state and its unprocessed messages;
   * replies not yet sent fail. The delivery log stays, for the record.
   */
  async remove(id: string, now: string): Promise<void> {
    await this.knex.transaction(async (trx) => {
      await trx('channels').where({ id }).delete();
      await trx('channel_users').where({ channel_id: id }).delete();
      await trx('channel_inbound')
        .where({ channel_id: id, status: 'pending' })
        .update({ status: 'failed', error: 'channel removed', payload: null, processed_at: now });
      await trx('channel_deliveries')
        .where({ channel_id: id, status: 'pending' })
        .update({ status: 'failed', last_error: 'channel removed', calls: null, next_attempt_at: null });
    });
  }

  /**
   * Records messages once each: a message whose provider id the channel has seen is a
   * redelivery and is not stored again (the unique index decides, across replicas). Returns how
   * many were new.
   */
  async receive(channel: { id: string; tenant_id: string }, messages: { key: string; user: string; payload: string }[], now: string): Promise<number> {
    if (!messages.length) return 0;
    return this.knex.transaction(async (trx) => {
      let fresh = 0;
      for (const m of messages) {
        const inserted = await trx('channel_inbound')
          .insert({
            channel_id: channel.id,
            tenant_id: channel.tenant_id,
            message_key: m.key,
            user_key: m.user,
            payload: m.payload,
            status: 'pending',
            attempts: 0,
            received_at: now,
          })
          .onConflict(['channel_id', 'message_key'])
          .ignore()
          .returning('id');
        if (!inserted.length) continue;
        fresh++;
        await trx('channel_users')
          .insert({ channel_id: channel.id, user_key: m.user, tenant_id: channel.tenant_id, last_inbound_at: now })
          .onConflict(['channel_id', 'user_key'])
          .merge(['last_inbound_at']);
      }
      return fresh;
    });
  }

  /** Users with messages waiting, oldest message first. */
  async waitingUsers(now: string, perTenant: number, limit: number): Promise<{ channel_id: string; user_key: string; tenant_id: string }[]> {
    const knex = this.knex;
    // Each tenant's `perTenant` users waiting longest, among users no process holds: a tenant
    // with a long queue fills its own share of a pass, never another tenant's.
    const ranked = knex('channel_inbound as i')
      .where('i.status', 'pending')
      .whereNotExists((sub) =>
        sub
          .select(knex.raw('1'))
          .from('channel_users as u')
          .whereRaw('u.channel_id = i.channel_id')
          .andWhereRaw('u.user_key = i.user_key')
          .andWhere('u.lease_until', '>=', now),
      )
      .groupBy('i.channel_id', 'i.user_key', 'i.tenant_id')
      .select(
        'i.channel_id',
        'i.user_key',
        'i.tenant_id',
        knex.raw('min(i.id) as first'),
        knex.raw('row_number() over (partition by i.tenant_id order by min(i.id)) as rn'),
      );
    return knex
      .from<{ channel_id: string; user_key: string; tenant_id: string }>(ranked.as('r'))
      .where('r.rn', '<=', perTenant)
      .orderBy('r.first')
      .limit(limit)
      .select('r.channel_id', 'r.user_key', 'r.tenant_id');
  }

  /** Takes a user's messages for `owner` until `until`, unless a process (this one too) holds them. */
  async lease(channelId: string, userKey: string, owner: string, now: string, until: string): Promise<boolean> {
    const moved = await this.knex('channel_users')
      .where({ channel_id: channelId, user_key: userKey })
      .andWhere((q) => q.whereNull('lease_until').orWhere('lease_until', '<', now))
      .update({ lease_owner: owner, lease_until: until });
    return n(moved) === 1;
  }

  /** Moves the end of a lease `owner` holds (to go on, or to hold a user's messages back after a failure). */
  async renew(channelId: string, userKey: string, owner: string, until: string): Promise<void> {
    await this.knex('channel_users').where({ channel_id: channelId, user_key: userKey, lease_owner: owner }).update({ lease_until: until });
  }

  async release(channelId: string, userKey: string, owner: string): Promise<void> {
    await this.knex('channel_users').where({ channel_id: channelId, user_key: userKey, lease_owner: owner }).update({ lease_owner: null, lease_until: null });
  }

  /** The user's oldest unprocessed message. */
  nextInbound(channelId: string, userKey: string): Promise<InboundRow | undefined> {
    return this.knex('channel_inbound')
      .where({ channel_id: channelId, user_key: userKey, status: 'pending' })
      .orderBy('id')
      .first('id', 'channel_id', 'tenant_id', 'user_key', 'payload', 'attempts', 'target');
  }

  user(channelId: string, userKey: string): Promise<UserRow | undefined> {
    return this.knex('channel_users').where({ channel_id: channelId, user_key: userKey }).first();
  }

  /** Fixes which conversation a message goes to before the turn runs, so that a retry sends the same request. */
  async setTarget(id: number, target: string): Promise<void> {
    await this.knex('channel_inbound').where({ id }).update({ target });
  }

  /** A failed try at a message: counted, and failed for good after the last. */
  async retryInbound(id: number, attempts: number, error: string, failed: boolean, now: string): Promise<void> {
    await this.knex('channel_inbound')
      .where({ id })
      .update({ attempts, error, ...(failed ? { status: 'failed', payload: null, processed_at: now } : {}) });
  }

  /**
   * A processed message, its user's current conversation and its reply's delivery, together: a
   * process that dies before this commits leaves the message to be processed again, and the
   * turn's idempotency key makes that a replay of the stored answer.
   */
  async completeInbound(
    row: InboundRow,
    done: { conversationId: string | null; replyTo: string; options: string | null; now: string; error?: string },
    delivery: DeliveryDraft | null,
  ): Promise<void> {
    await this.knex.transaction(async (trx) => {
      if (delivery) await insertDelivery(trx, delivery);
      if (done.conversationId) {
        await trx('channel_users')
          .where({ channel_id: row.channel_id, user_key: row.user_key })
          .update({ conversation_id: done.conversationId, reply_to: done.replyTo, options: done.options });
      }
      await trx('channel_inbound')
        .where({ id: row.id })
        .update({
          status: done.error ? 'failed' : 'done',
          error: done.error ?? null,
          payload: null,
          conversation_id: done.conversationId,
          processed_at: done.now,
        });
    });
  }

  /** Queues a delivery once per source (a processed message, an operator's turn). */
  async enqueue(d: DeliveryDraft): Promise<void> {
    await insertDelivery(this.knex, d);
  }

  /** Due deliveries with no earlier unsent one for their channel user, at most `perTenant` of each tenant. */
  async dueDeliveries(now: string, perTenant: number, limit: number): Promise<{ id: number; tenant_id: string }[]> {
    return (await dueInOrder(this.knex, CHANNEL_OUTBOX, now, perTenant, limit)).map((r) => ({ id: n(r.id), tenant_id: r.tenant_id }));
  }

  /** Claims deliveries by moving their next attempt to `until`: of two processes one gets each. */
  async claim(ids: number[], now: string, until: string): Promise<OutboxRow[]> {
    const rows = await claimDue(this.knex, 'channel_deliveries', ids, now, until).returning(OUTBOX_COLUMNS);
    return (rows as OutboxRow[]).map(toOutbox);
  }

  /** Postpones a delivery without an attempt (its channel is paused). */
  async postpone(id: number, until: string): Promise<void> {
    await this.knex('channel_deliveries').where({ id }).update({ next_attempt_at: until });
  }

  /** Records an attempt's calls and the delivery's new state together. Finished deliveries drop their text. */
  async recordAttempt(row: OutboxRow, attempt: number, calls: AttemptRecord[], update: Record<string, unknown>): Promise<void> {
    await this.knex.transaction(async (trx) => {
      if (calls.length) {
        await trx('channel_attempts').insert(
          calls.map((c) => ({
            delivery_id: row.id,
            attempt,
            call: c.call,
            tenant_id: row.tenant_id,
            method: c.method,
            at: c.at,
            status: c.status,
            error: c.error,
            duration_ms: c.durationMs,
          })),
        );
      }
      await trx('channel_deliveries')
        .where({ id: row.id })
        .update({ ...update, attempts: attempt });
    });
  }

  /** Forgets up to `limit` processed messages received before `before` (their ids); answers how many. */
  async forgetInbound(before: string, limit: number): Promise<number> {
    const ids = this.knex('channel_inbound').where('received_at', '<', before).whereNot('status', 'pending').orderBy('received_at').limit(limit).select('id');
    return n(await this.knex('channel_inbound').whereIn('id', ids).delete());
  }

  /** Finished deliveries whose audit entry is not written yet (a process died in between). */
  unaudited(before: string, limit: number): Promise<{ id: unknown }[]> {
    return this.knex('channel_deliveries')
      .whereIn('status', ['sent', 'failed', 'refused'])
      .andWhere('audited', false)
      .andWhere('created_at', '<', before)
      .limit(limit)
      .select('id');
  }

  async delivery(id: number): Promise<(DeliveryListRow & { tenant_id: string; audited: boolean | number }) | undefined> {
    return (await this.knex('channel_deliveries').where({ id }).first()) as (DeliveryListRow & { tenant_id: string; audited: boolean | number }) | undefined;
  }

  async markAudited(id: number): Promise<void> {
    await this.knex('channel_deliveries').where({ id }).update({ audited: true });
  }

  /** An agent's deliveries, newest first, each with its attempts, a page at a time. */
  async list(tenantId: string, agentId: string, q: { channel?: string; status?: string; conversation_id?: string; limit: number; cursor?: string }) {
    const position = decodeCursor(q.cursor, isTimeAndId);
    const query = this.knex('channel_deliveries').where({ tenant_id: tenantId, agent_id: agentId });
    if (q.channel) query.andWhere('kind', q.channel);
    if (q.status) query.andWhere('status', q.status);
    if (q.conversation_id) query.andWhere('conversation_id', q.conversation_id);
    if (position) query.andWhere('id', '<', Number(position[1]));
    const rows = (await query.orderBy('id', 'desc').limit(q.limit + 1)) as DeliveryListRow[];
    const page = rows.slice(0, q.limit);
    const attempts = page.length
      ? ((await this.knex('channel_attempts')
          .where({ tenant_id: tenantId })
          .whereIn(
            'delivery_id',
            page.map((r) => r.id),
          )
          .orderBy(['delivery_id', 'attempt', 'call'])) as AttemptListRow[])
      : [];
    const last = page.at(-1);
    return {
      next_cursor: rows.length > q.limit && last ? encodeCursor([last.created_at, String(last.id)]) : null,
      data: page.map((r) => ({
        id: String(r.id),
        channel: r.kind,
        conversation_id: r.conversation_id,
        source: r.source,
        status: r.status,
        calls: n(r.call_count),
        calls_done: n(r.calls_done),
        attempts: n(r.attempts),
        next_attempt_at: r.next_attempt_at,
        created_at: r.created_at,
        sent_at: r.sent_at,
        latency_ms: r.latency_ms === null ? null : n(r.latency_ms),
        provider_message_ids: JSON.parse(r.provider_ids) as string[],
        last_status: r.last_status === null ? null : n(r.last_status),
        last_error: r.last_error,
        history: attempts
          .filter((a) => n(a.delivery_id) === n(r.id))
          .map((a) => ({
            attempt: n(a.attempt),
            at: a.at,
            call: a.method,
            status: a.status === null ? null : n(a.status),
            error: a.error,
            duration_ms: n(a.duration_ms),
          })),
      })),
    };
  }
}

async function insertDelivery(knex: Knex, d: DeliveryDraft): Promise<void> {
  await knex('channel_deliveries')
    .insert({
      tenant_id: d.tenantId,
      agent_id: d.agentId,
      channel_id: d.channelId,
      kind: d.kind,
      conversation_id: d.conversationId,
      user_key: d.userKey,
      source: d.source,
      source_key: d.sourceKey,
      calls: JSON.stringify(d.calls),
      call_count: d.calls.length,
      calls_done: 0,
      status: 'pending',
      attempts: 0,
      next_attempt_at: d.now,
      created_at: d.now,
      provider_ids: '[]',
      audited: false,
    })
    .onConflict(['channel_id', 'source_key'])
    .ignore();
}

/** A channel row's ignored updates, newest first; nothing for a value that is not such a list. */
export function parseIgnored(text: string | null | undefined): { at: string; reason: string }[] {
  try {
    const v = JSON.parse(text ?? '[]') as unknown;
    if (!Array.isArray(v)) return [];
    return (v as unknown[]).filter((e): e is { at: string; reason: string } => {
      const o = e as { at?: unknown; reason?: unknown } | null;
      return typeof o === 'object' && o !== null && typeof o.at === 'string' && typeof o.reason === 'string';
    });
  } catch {
    return [];
  }
}
