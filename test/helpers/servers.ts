// Test HTTP servers: an app on a fresh database, and a recording backend for actions.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { createApp, type App } from '../../server/src/app.js';
import { loadConfig, type Config } from '../../server/src/config.js';
import type { Clock } from '../../server/src/lib/clock.js';
import type { Database } from '../../server/src/store/db.js';

/** Test configuration: no rate limit unless a test sets one. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return loadConfig(
    { LOG_LEVEL: 'silent', RATE_LIMIT_RPS: '0', SWITCHBOARD_SECRET_ORDERS_TOKEN: 'tok-s3cret-value', SWITCHBOARD_SECRET_ORDERS_TOKEN_TENANTS: 'acme' },
    overrides,
  );
}

export function testApp(db: Database, overrides: Partial<Config> = {}, clock?: Clock, logger: Logger = pino({ level: 'silent' })): App {
  return createApp(testConfig(overrides), { db, logger, clock, actionRetryBaseMs: 5 });
}

export interface Backend {
  url: string;
  port: number;
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  close(): Promise<void>;
}

/** A loopback server that records every request and answers with `handler`. */
export async function startBackend(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<Backend> {
  const requests: Backend['requests'] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

/** An orders API: 100001 shipped, 100002 preparing, 500000 fails with 503, others 404; /tick answers after 15 ms. */
export function ordersHandler(req: IncomingMessage, res: ServerResponse): void {
  if (req.url?.startsWith('/tick')) {
    setTimeout(() => json(res, 200, { ok: true }), 15);
    return;
  }
  const id = /\/orders\/(\d+)/.exec(req.url ?? '')?.[1];
  if (id === '100001') return json(res, 200, { status: 'shipped', shipped_at: '2026-11-20', eta: '2026-11-25' });
  if (id === '100002') return json(res, 200, { status: 'preparing', eta: '2026-11-30' });
  if (id === '500000') return json(res, 503, { error: 'down' });
  return json(res, 404, { error: 'no such order' });
}

/** An app listening on a loopback port, for clients that speak HTTP (the typed client, the CLI). */
export async function listen(app: App): Promise<{ url: string; close(): Promise<void> }> {
  const server = app.app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A loopback port free at the time of asking (for a server process the test starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createTcpServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Polls `url` until it answers 2xx (every 100 ms, at most `tries` times); false if it never did or `child` exited. */
export async function answersOk(url: string, opts: { tries?: number; child?: { exitCode: number | null } } = {}): Promise<boolean> {
  for (let i = 0; i < (opts.tries ?? 300); i++) {
    if (opts.child && opts.child.exitCode !== null) return false;
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}
