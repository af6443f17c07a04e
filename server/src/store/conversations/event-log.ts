// The event log behind server-sent events: one row per write (numbered per conversation), read
// after a position; and, on PostgreSQL, the LISTEN connection that hears other processes'
// commits (new events, released conversation leases) and re-emits them in this process.
import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { Database } from '../db.js';
import { conversationHistory } from '../partitions.js';
import pg from 'pg';
import { rawConnection, type RawPgConnection } from '../knex-adapter.js';

/** The channel on which a write with new events names its conversation, when an event stream follows it (postgres-writer.ts). */
const EVENTS_CHANNEL = 'switchboard_events';
/** The channel on which a released conversation lease names its conversation (migration 006's trigger). */
const LEASES_CHANNEL = 'switchboard_leases';

/** Where a reader of a conversation's events stands: after event `index` of its event row `row`. */
export interface EventPosition {
  row: number;
  index: number;
}

export function parseEventId(id: string): EventPosition {
  const parts = id.split('-').map(Number);
  return { row: parts[0], index: parts.length > 1 ? parts[1] : Number.MAX_SAFE_INTEGER };
}

export class EventLog {
  private readonly knex: Knex;
  /** Emits 'event' with a conversation id whenever events of that conversation were committed, by any process. */
  readonly changes = new EventEmitter();
  /** Emits 'released' with a conversation id when another process released its lease (PostgreSQL). */
  readonly released = new EventEmitter();
  private listener: { stop(): Promise<void> } | null = null;

  constructor(private readonly db: Database) {
    this.knex = db.knex;
    this.changes.setMaxListeners(0);
    this.released.setMaxListeners(0);
  }

  /** On PostgreSQL, LISTENs for other processes' commits (reconnecting when the connection drops). */
  async listen(log: { warn(o: object, m: string): void }): Promise<void> {
    if (!this.db.adapter.shared || this.listener) return;
    this.changes.setMaxListeners(0);
    let stopped = false;
    let client: RawPgConnection | null = null;
    const connect = async (): Promise<void> => {
      if (stopped) return;
      try {
        client = await this.listenConnection();
        client.on('notification', (msg: { channel?: string; payload?: string }) => {
          if (!msg.payload) return;
          if (msg.channel === LEASES_CHANNEL) this.released.emit('released', msg.payload);
          else this.changes.emit('event', msg.payload);
        });
        client.on('error', (err: Error) => {
          log.warn({ err }, 'event listener connection lost; reconnecting');
          client = null;
          setTimeout(() => void connect(), 1000).unref();
        });
        await client.query(`LISTEN ${EVENTS_CHANNEL}; LISTEN ${LEASES_CHANNEL}`);
      } catch (err) {
        log.warn({ err }, 'event listener could not connect; retrying');
        setTimeout(() => void connect(), 1000).unref();
      }
    };
    await connect();
    this.listener = {
      stop: async () => {
        stopped = true;
        if (client) await this.closeListenConnection(client).catch(() => undefined);
      },
    };
  }

  /** A session for LISTEN: on the database's own pool's terms, or straight to the server named by `listenUrl`. */
  private async listenConnection(): Promise<RawPgConnection> {
    if (!this.db.listenUrl) return rawConnection(this.knex).acquire();
    const client = new pg.Client({ connectionString: this.db.listenUrl, connectionTimeoutMillis: 5_000, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    return client;
  }

  private closeListenConnection(client: RawPgConnection): Promise<void> {
    if (!this.db.listenUrl) return rawConnection(this.knex).destroy(client);
    return (client as unknown as pg.Client).end();
  }

  async stopListening(): Promise<void> {
    await this.listener?.stop();
    this.listener = null;
  }

  /**
   * Events of a conversation after `after`, oldest first, each with its id (`seq-index`, numbered per
   * conversation). `createdAt`, the conversation's creation time: on PostgreSQL the read skips the
   * months before it (store/partitions.ts).
   */
  async events(
    tenantId: string,
    conversationId: string,
    after: EventPosition,
    opts: { limit?: number; createdAt?: string } = {},
  ): Promise<{ id: string; position: EventPosition; type: string; data: unknown }[]> {
    const rows = await this.ofConversation(tenantId, conversationId, opts.createdAt)
      .andWhere('seq', '>=', after.row)
      .orderBy('seq', 'asc')
      .limit(opts.limit ?? 100);
    const out: { id: string; position: EventPosition; type: string; data: unknown }[] = [];
    for (const r of rows) {
      const row = Number(r.seq);
      (JSON.parse(r.events) as { type: string; data: unknown }[]).forEach((e, index) => {
        if (row > after.row || index > after.index) out.push({ id: `${row}-${index}`, position: { row, index }, type: e.type, data: e.data });
      });
    }
    return out;
  }

  /**
   * On PostgreSQL, marks a tenant's conversations as followed by an event stream until `until`:
   * their writes announce new events (postgres-writer.ts) only while so marked. Committed before
   * the stream's first read, so a write is either announced or already there to read. Elsewhere
   * this process hears its own writes, and nothing is marked.
   */
  async watch(tenantId: string, ids: string[], until: string): Promise<void> {
    if (!this.db.adapter.shared) return;
    // In statements of a thousand ids: a process may follow many conversations of one tenant.
    for (let i = 0; i < ids.length; i += 1000) {
      await this.knex('conversations')
        .where('tenant_id', tenantId)
        .whereIn('id', ids.slice(i, i + 1000))
        .update({ watched_until: until });
    }
  }

  private ofConversation(tenantId: string, conversationId: string, createdAt: string | undefined) {
    return conversationHistory(this.knex, 'conversation_events', createdAt).where({ tenant_id: tenantId, conversation_id: conversationId });
  }

  /** The position after a conversation's newest event. */
  async lastEventPosition(tenantId: string, conversationId: string, createdAt?: string): Promise<EventPosition> {
    const r = await this.ofConversation(tenantId, conversationId, createdAt).max({ m: 'seq' }).first();
    return { row: Number(r?.m ?? 0), index: Number.MAX_SAFE_INTEGER };
  }
}
