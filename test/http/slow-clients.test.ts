// Slow clients cannot hold the door: two thousand connections from one address trickling a
// request body a byte at a time, without any credential, while another client's requests are
// answered and the server opens database connections as it needs them. Connections past
// MAX_CONNECTIONS_PER_ADDRESS close at once; the rest are cut at REQUEST_TIMEOUT_MS. The
// production server (main.ts start) on each database.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/src/config.js';
import { start } from '../../server/src/main.js';
import { PG_URL, warnIfPostgresSkipped } from '../helpers/databases.js';
import { waitUntil } from '../helpers/wait.js';

warnIfPostgresSkipped();

const TRICKLERS = 2000;
const PER_ADDRESS = 50;

/** One request from local address `from`, its status and body. */
function ask(port: number, from: string, o: { method?: string; path: string; body?: string; headers?: Record<string, string> }) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, localAddress: from, method: o.method ?? 'GET', path: o.path, headers: { ...o.headers, connection: 'close' } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

const dir = mkdtempSync(join(tmpdir(), 'switchboard-slow-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const targets = [
  { name: 'sqlite', url: () => `sqlite://${join(dir, 'slow.db')}`, drop: async () => undefined },
  ...(PG_URL
    ? [
        (() => {
          const name = `sb_slow_${randomBytes(4).toString('hex')}`;
          const u = new URL(PG_URL);
          u.pathname = `/${name}`;
          return {
            name: 'postgres',
            url: () => u.toString(),
            drop: async () => {
              const k = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 1 } });
              await k.raw(`drop database if exists ${name} with (force)`);
              await k.destroy();
            },
          };
        })(),
      ]
    : []),
];

describe.each(targets)('slow clients on $name', (target) => {
  it(`answers others while ${TRICKLERS} connections from one address trickle their bodies`, async () => {
    const config = loadConfig(
      {
        PORT: '0',
        DATABASE_URL: target.url(),
        DB_POOL_MAX: '4',
        HEADERS_TIMEOUT_MS: '1000',
        REQUEST_TIMEOUT_MS: '2000',
        MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
        RATE_LIMIT_RPS: '0',
        SWEEP_INTERVAL_MS: '0',
        WEBHOOK_INTERVAL_MS: '0',
        CHANNEL_INTERVAL_MS: '0',
      },
      {},
      'serve',
    );
    const running = await start(config, { logger: pino({ level: 'silent' }) });
    const port = (running.server.address() as { port: number }).port;
    const sockets: Socket[] = [];
    let trickle: NodeJS.Timeout | undefined;
    try {
      await ask(port, '127.0.0.2', {
        method: 'PUT',
        path: '/api/v1/agents/echo',
        headers: { 'tenant-id': 'acme', 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Echo',
          routing: { fallback: 'echo' },
          capabilities: [{ name: 'echo', examples: ['hello', 'anything'], phases: [{ id: 'say', say: 'You said: {{ message }}' }] }],
        }),
      });
      // No credential, no channel: a webhook URL and the API, each announcing a body it sends a byte at a time.
      let closed = 0;
      for (let i = 0; i < TRICKLERS; i++) {
        const s = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' });
        s.on('error', () => undefined);
        s.on('close', () => closed++);
        s.write(
          `POST ${i % 2 ? '/hooks/v1/ch_x' : '/api/v1/agents/echo/converse'} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{`,
        );
        sockets.push(s);
      }
      trickle = setInterval(() => {
        for (const s of sockets) if (!s.destroyed) s.write(' ');
      }, 200);
      // All but PER_ADDRESS of them are closed at once.
      await waitUntil('the connections past the per-address cap to close', () => closed >= TRICKLERS - PER_ADDRESS, 10_000, 20);
      // Meanwhile another client is answered, reading and writing the database.
      for (let i = 0; i < 5; i++) {
        expect((await ask(port, '127.0.0.2', { path: '/readyz' })).status).toBe(200);
        const said = await ask(port, '127.0.0.2', {
          method: 'POST',
          path: '/api/v1/agents/echo/converse',
          headers: { 'tenant-id': 'acme', 'content-type': 'application/json' },
          body: JSON.stringify({ message: `hello ${i}` }),
        });
        expect(said.status).toBe(200);
      }
      // The ones held are cut at REQUEST_TIMEOUT_MS, still trickling.
      await waitUntil('every trickling connection to be closed by the server', () => closed === TRICKLERS, 8000, 50);
      expect(await new Promise<number>((r) => running.server.getConnections((_e, n) => r(n)))).toBe(0);
    } finally {
      clearInterval(trickle);
      for (const s of sockets) s.destroy();
      await running.stop();
      await target.drop();
    }
  }, 60_000);
});
