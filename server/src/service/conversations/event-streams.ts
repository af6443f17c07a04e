// Server-sent events of conversations: replays what came after Last-Event-ID, then follows new
// events as they are committed by any server process (PostgreSQL LISTEN/NOTIFY, or this
// process's own commits on SQLite), with heartbeats; ends cleanly when the client goes.
// Streams are capped per tenant and per conversation; a commit costs one read per conversation
// however many streams follow it (the rows are fanned out to each); a stream opened with an API
// key ends when the key is revoked (at once here, within a heartbeat on other processes).
import { PassThrough } from 'node:stream';
import { TooManyStreamsError, UnavailableError } from '../../errors.js';
import { parseEventId, type EventLog, type EventPosition } from '../../store/conversations/event-log.js';

export interface EventStreams {
  /** A stream of one conversation's events; it ends when `signal` aborts (the client went). */
  /** `createdAt`: the conversation's creation time, which bounds the months its events are read from. */
  open(opts: {
    tenantId: string;
    conversationId: string;
    createdAt?: string;
    lastEventId: string | null;
    keyId: string | null;
    /**
     * A count of its own for the stream instead of the tenant's (the widget's streams count per
     * publishable key), so that one kind of stream never fills the tenant's SSE_MAX_PER_TENANT.
     */
    pool?: { name: string; limit: number; what: string };
    signal: AbortSignal;
  }): Promise<PassThrough>;
  /** Ends the streams opened with these keys (revoked). */
  endForKeys(keyIds: readonly string[]): void;
  /** Open streams in all. */
  readonly size: number;
  /** Ends every open stream and refuses new ones (shutdown: clients resume on another replica with Last-Event-ID). */
  closeAll(): void;
}

export interface EventStreamOptions {
  heartbeatMs: number;
  perTenant: number;
  perConversation: number;
  /** Of these key ids, the ones revoked since (checked once per heartbeat for all streams). */
  revoked?: (keyIds: string[]) => Promise<string[]>;
  log: { warn(o: object, m: string): void };
}

interface Subscriber {
  tenantId: string;
  keyId: string | null;
  last: EventPosition;
  stream: PassThrough;
  close: () => void;
}

const before = (a: EventPosition, b: EventPosition) => a.row < b.row || (a.row === b.row && a.index < b.index);

export function eventStreams(events: EventLog, opts: EventStreamOptions): EventStreams {
  const byConversation = new Map<string, { tenantId: string; createdAt?: string; subs: Set<Subscriber>; pumping: boolean; again: boolean }>();
  /** Open streams per tenant (`tenant:<id>`) or per pool of their own (`pool:<name>`). */
  const counts = new Map<string, number>();
  let size = 0;
  let shutDown = false;

  // One reader per conversation at a time; a notification during a read asks for one more pass.
  const pump = async (conversationId: string) => {
    const group = byConversation.get(conversationId);
    if (!group) return;
    if (group.pumping) {
      group.again = true;
      return;
    }
    group.pumping = true;
    try {
      do {
        group.again = false;
        let batch;
        do {
          if (!group.subs.size) return;
          // From the position of the stream furthest behind; each stream skips what it has seen.
          let from: EventPosition | null = null;
          for (const s of group.subs) if (!from || before(s.last, from)) from = s.last;
          batch = await events.events(group.tenantId, conversationId, from!, { createdAt: group.createdAt });
          for (const e of batch) {
            const frame = `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`;
            for (const s of group.subs) {
              if (!before(s.last, e.position)) continue;
              s.stream.write(frame);
              s.last = e.position;
            }
          }
        } while (batch.length);
        // Set by a notification that arrived during the reads above.
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
      } while (group.again);
    } catch (err) {
      opts.log.warn({ err, conversation: conversationId }, 'event stream read failed');
    } finally {
      group.pumping = false;
    }
  };
  const onEvent = (id: string) => {
    if (byConversation.has(id)) void pump(id);
  };
  events.changes.setMaxListeners(0);
  events.changes.on('event', onEvent);

  // How long a mark that a stream follows a conversation lasts (EventLog.watch): renewed with every
  // heartbeat, so it outlives a missed renewal or two, and lapses soon after a process stops.
  const watchedUntil = () => new Date(Date.now() + 3 * opts.heartbeatMs).toISOString();
  const heartbeat = setInterval(() => {
    const keys = new Set<string>();
    const watched = new Map<string, string[]>();
    for (const [id, g] of byConversation) {
      const ids = watched.get(g.tenantId);
      if (ids) ids.push(id);
      else watched.set(g.tenantId, [id]);
      for (const s of g.subs) {
        s.stream.write(': ping\n\n');
        if (s.keyId) keys.add(s.keyId);
      }
    }
    const until = watchedUntil();
    for (const [tenantId, ids] of watched) {
      events.watch(tenantId, ids, until).catch((err: unknown) => opts.log.warn({ err }, 'event stream mark could not be renewed'));
    }
    if (keys.size && opts.revoked) {
      opts.revoked([...keys]).then(
        (gone) => api.endForKeys(gone),
        (err: unknown) => opts.log.warn({ err }, 'event stream key check failed'),
      );
    }
  }, opts.heartbeatMs);
  heartbeat.unref();

  const api: EventStreams = {
    async open({ tenantId, conversationId, createdAt, lastEventId, keyId, pool, signal }) {
      // Marked before anything is read: a write after the mark announces its events, one before it is there to read.
      await events.watch(tenantId, [conversationId], watchedUntil());
      const last = lastEventId !== null ? parseEventId(lastEventId) : await events.lastEventPosition(tenantId, conversationId, createdAt);
      // Checked after the read, so that nothing between the check and the count can interleave.
      if (shutDown) throw new UnavailableError('This server is shutting down: follow the conversation on another replica (with Last-Event-ID)');
      const group = byConversation.get(conversationId);
      const counted = pool ? `pool:${pool.name}` : `tenant:${tenantId}`;
      const limit = pool ? pool.limit : opts.perTenant;
      if ((counts.get(counted) ?? 0) >= limit) throw new TooManyStreamsError(pool ? pool.what : 'for this tenant', limit);
      if (group && group.subs.size >= opts.perConversation) throw new TooManyStreamsError('on this conversation', opts.perConversation);
      const stream = new PassThrough();
      let closed = false;
      const sub: Subscriber = {
        tenantId,
        keyId,
        last,
        stream,
        close: () => {
          if (closed) return;
          closed = true;
          size--;
          const n = (counts.get(counted) ?? 1) - 1;
          if (n > 0) counts.set(counted, n);
          else counts.delete(counted);
          const g = byConversation.get(conversationId);
          g?.subs.delete(sub);
          if (g && !g.subs.size) byConversation.delete(conversationId);
          stream.end();
        },
      };
      const g = byConversation.get(conversationId) ?? { tenantId, createdAt, subs: new Set<Subscriber>(), pumping: false, again: false };
      byConversation.set(conversationId, g);
      g.subs.add(sub);
      size++;
      counts.set(counted, (counts.get(counted) ?? 0) + 1);
      if (signal.aborted) sub.close();
      else signal.addEventListener('abort', sub.close, { once: true });
      stream.write('retry: 2000\n\n');
      void pump(conversationId);
      return stream;
    },
    endForKeys(keyIds) {
      if (!keyIds.length) return;
      const gone = new Set(keyIds);
      for (const g of [...byConversation.values()]) for (const s of [...g.subs]) if (s.keyId && gone.has(s.keyId)) s.close();
    },
    get size() {
      return size;
    },
    closeAll() {
      shutDown = true;
      clearInterval(heartbeat);
      events.changes.off('event', onEvent);
      for (const g of [...byConversation.values()]) for (const s of [...g.subs]) s.close();
    },
  };
  return api;
}
