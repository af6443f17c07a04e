// Server-sent events of one conversation: replays what came after Last-Event-ID, then follows
// new events as they are committed by any server process (PostgreSQL LISTEN/NOTIFY, or this
// process's own commits on SQLite), with heartbeats; ends cleanly when the client goes.
import type { Request } from 'express';
import { PassThrough } from 'node:stream';
import { parseEventId, type ConversationStore } from '../store/conversation-store.js';

export interface EventStreams {
  open(tenantId: string, conversationId: string, lastEventId: string | null, req: Request): Promise<PassThrough>;
  /** Ends every open stream (shutdown). */
  closeAll(): void;
}

export function eventStreams(store: ConversationStore, heartbeatMs: number, log: { warn(o: object, m: string): void }): EventStreams {
  const open = new Set<() => void>();
  return {
    async open(tenantId, conversationId, lastEventId, req) {
      const stream = new PassThrough();
      let last = lastEventId !== null ? parseEventId(lastEventId) : await store.lastEventPosition(tenantId, conversationId);
      let pumping = false;
      let again = false;
      let closed = false;
      // One reader at a time; a notification during a read asks for one more pass.
      const pump = async () => {
        if (pumping) {
          again = true;
          return;
        }
        pumping = true;
        try {
          do {
            again = false;
            let batch;
            do {
              batch = await store.events(tenantId, conversationId, last);
              for (const e of batch) {
                if (closed) return;
                stream.write(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`);
                last = e.position;
              }
            } while (batch.length && !closed);
          } while (again && !closed);
        } catch (err) {
          log.warn({ err, conversation: conversationId }, 'event stream read failed');
        } finally {
          pumping = false;
        }
      };
      const onEvent = (id: string) => {
        if (id === conversationId) void pump();
      };
      const heartbeat = setInterval(() => stream.write(': ping\n\n'), heartbeatMs);
      heartbeat.unref();
      const close = () => {
        if (closed) return;
        closed = true;
        clearInterval(heartbeat);
        store.changes.off('event', onEvent);
        open.delete(close);
        stream.end();
      };
      open.add(close);
      store.changes.on('event', onEvent);
      req.on('close', close);
      stream.write('retry: 2000\n\n');
      void pump();
      return stream;
    },
    closeAll() {
      for (const close of [...open]) close();
    },
  };
}
