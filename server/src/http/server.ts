// The HTTP server around the app, with the bounds a slow or crowded client meets before any
// handler runs: its headers within HEADERS_TIMEOUT_MS and its whole request (body included)
// within REQUEST_TIMEOUT_MS, checked every second; at most MAX_CONNECTIONS open connections in
// the process, and, where no trusted proxy stands in front (TRUST_PROXY unset, so the peer is the
// client), at most MAX_CONNECTIONS_PER_ADDRESS from one address. A connection past a cap is
// closed at once. Responses are not bounded here: an event stream lasts as long as its client.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.js';

export function createHttpServer(app: RequestListener, config: Pick<Config, 'connections' | 'trustProxy'>, log: { warn(o: object, m: string): void }): Server {
  const c = config.connections;
  const server = createServer(
    { headersTimeout: c.headersTimeoutMs, requestTimeout: c.requestTimeoutMs, connectionsCheckingInterval: Math.min(1000, c.headersTimeoutMs) },
    app,
  );
  server.maxConnections = c.max;
  if (config.trustProxy === false) {
    const perAddress = new Map<string, number>();
    let warned = 0;
    server.on('connection', (socket: Socket) => {
      const address = socket.remoteAddress ?? 'unknown';
      const n = (perAddress.get(address) ?? 0) + 1;
      if (n > c.perAddress) {
        socket.destroy();
        if (Date.now() - warned > 60_000) {
          warned = Date.now();
          log.warn({ address, limit: c.perAddress }, 'connections refused: one address holds MAX_CONNECTIONS_PER_ADDRESS (said once a minute)');
        }
        return;
      }
      perAddress.set(address, n);
      socket.once('close', () => {
        const left = (perAddress.get(address) ?? 1) - 1;
        if (left > 0) perAddress.set(address, left);
        else perAddress.delete(address);
      });
    });
  }
  return server;
}
