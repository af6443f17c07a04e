// Reads a server-sent event stream with fetch, event by event.
export interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

export async function openSse(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const queue: SseEvent[] = [];
  const waiters: (() => void)[] = [];
  let ended = false;
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let i: number;
        while ((i = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          const ev: SseEvent = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) ev.comment = line.slice(1).trim();
            else {
              const [k, ...rest] = line.split(':');
              const v = rest.join(':').replace(/^ /, '');
              if (k === 'id' || k === 'event' || k === 'data') ev[k] = v;
            }
          }
          queue.push(ev);
          waiters.splice(0).forEach((w) => w());
        }
      }
    } catch {
      /* aborted */
    } finally {
      ended = true;
      waiters.splice(0).forEach((w) => w());
    }
  })();
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    /** The next event (comments included), or null when the stream ends first; fails after `ms`. */
    async next(ms = 5000): Promise<SseEvent | null> {
      const deadline = Date.now() + ms;
      while (!queue.length) {
        if (ended) return null;
        if (Date.now() > deadline) throw new Error('no event in time');
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
      return queue.shift()!;
    },
    /** The next `n` events that are not comments. */
    async take(n: number, ms = 5000): Promise<SseEvent[]> {
      const out: SseEvent[] = [];
      while (out.length < n) {
        const e = await this.next(ms);
        if (!e) break;
        if (e.event) out.push(e);
      }
      return out;
    },
    close: () => controller.abort(),
  };
}
