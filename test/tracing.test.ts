// Traces: the built server started as `npm run serve` starts it (node dist/…), with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at a loopback collector that keeps what the OTLP/HTTP exporter sends; one converse
// call must give one trace: the HTTP server span, Express's, switchboard.converse, its routing
// and action spans, and the action's outgoing undici span; the request's log line carries the
// trace id. Without the variable, nothing is exported and log lines carry no trace id.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderLookupAgent } from './helpers/agents.js';
import { freePort, json, startBackend, type Backend } from './helpers/servers.js';
import { waitUntil } from './helpers/wait.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

async function startServer(env: Record<string, string>): Promise<{ base: string; child: ChildProcess; lines: string[]; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', './dist/server/src/tracing-preload.js', 'dist/server/src/main.js'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', AGENTS_DIR: '', RATE_LIMIT_RPS: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let partial = '';
  child.stdout!.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  };
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { base, child, lines, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error('server did not start');
}

describe('traces', () => {
  let collector: Backend;
  let orders: Backend;
  let dir: string;
  const spans: OtlpSpan[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchboard-tracing-'));
    orders = await startBackend((_req, res) => json(res, 200, { status: 'shipped' }));
    collector = await startBackend((req, res, body) => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const r of doc.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      }
      json(res, 200, {});
    });
  });
  afterAll(async () => {
    await orders.close();
    await collector.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const converse = async (base: string, message: string, conversation_id?: string) => {
    const r = await fetch(`${base}/api/v1/agents/shop/converse`, {
      method: 'POST',
      headers: { 'tenant-id': 'acme', 'content-type': 'application/json', 'user-id': 'u-secret-42' },
      body: JSON.stringify({ message, conversation_id }),
    });
    expect(r.status).toBe(200);
    return (await r.json()) as { conversation_id: string };
  };

  it('exports the span tree of a converse call, and puts its trace id in the log line', async () => {
    const server = await startServer({
      DATABASE_URL: `sqlite://${join(dir, 'traced.db')}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      ACTION_ALLOWED_HOSTS: `acme=127.0.0.1:${orders.port}`,
      SWITCHBOARD_SECRET_TRACE_TOKEN: 'trace-s3cret-value',
      SWITCHBOARD_SECRET_TRACE_TOKEN_TENANTS: 'acme',
    });
    try {
      const agent = orderLookupAgent(orders.url);
      agent.actions!.get_order.url += '?key={{ secrets.TRACE_TOKEN }}';
      const put = await fetch(`${server.base}/api/v1/agents/shop`, {
        method: 'PUT',
        headers: { 'tenant-id': 'acme', 'content-type': 'application/json' },
        body: JSON.stringify(agent),
      });
      expect(put.status).toBe(200);
      const first = await converse(server.base, 'where is my order');
      await converse(server.base, 'A-1', first.conversation_id);
      let converseSpans: OtlpSpan[] = [];
      await waitUntil('both converse spans exported', () => (converseSpans = spans.filter((s) => s.name === 'switchboard.converse')).length >= 2, 10_000, 100);
      expect(converseSpans).toHaveLength(2);
      // The second call: the one with the action.
      const root = converseSpans.find((s) => spans.some((c) => c.parentSpanId === s.spanId && c.name === 'switchboard.action'))!;
      expect(root).toBeDefined();
      const inTrace = spans.filter((s) => s.traceId === root.traceId);
      const byId = new Map(inTrace.map((s) => [s.spanId, s]));
      const ancestors: OtlpSpan[] = [];
      for (let p = root.parentSpanId && byId.get(root.parentSpanId); p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) ancestors.push(p);
      // Above: Express's route handler and the HTTP server span (kind 2 = SERVER) at the top.
      expect(ancestors.at(-1)).toMatchObject({ kind: 2 });
      expect(ancestors.at(-1)!.name).toMatch(/^POST/);
      expect(ancestors.some((s) => /route|request handler|middleware/i.test(s.name))).toBe(true);
      const children = inTrace.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name);
      expect(children).toContain('switchboard.action');
      const action = inTrace.find((s) => s.parentSpanId === root.spanId && s.name === 'switchboard.action')!;
      expect(action.attributes).toContainEqual({ key: 'switchboard.action', value: { stringValue: 'get_order' } });
      // The action's HTTP call (kind 3 = CLIENT), from the undici instrumentation, under it.
      const outgoing = inTrace.filter((s) => s.parentSpanId === action.spanId);
      expect(outgoing).toContainEqual(expect.objectContaining({ kind: 3 }));
      // The first call routed: its routing span sits under its converse span.
      const firstRoot = converseSpans.find((s) => s !== root)!;
      expect(spans.filter((s) => s.parentSpanId === firstRoot.spanId).map((s) => s.name)).toContain('switchboard.routing');
      // No span carries the secret the action sent or the user's id, from a header, a query or a path.
      const list = await fetch(`${server.base}/api/v1/agents/shop/conversations?user_id=u-secret-42`, { headers: { 'tenant-id': 'acme' } });
      expect(list.status).toBe(200);
      const erase = await fetch(`${server.base}/api/v1/users/u-secret-42/conversations`, { method: 'DELETE', headers: { 'tenant-id': 'acme' } });
      expect(erase.status).toBe(200);
      expect(orders.requests.at(-1)!.url).toContain('trace-s3cret-value');
      await waitUntil('the erasure span exported', () => spans.some((s) => s.name.startsWith('DELETE')), 10_000, 100);
      expect(JSON.stringify(spans)).not.toContain('trace-s3cret-value');
      expect(JSON.stringify(spans)).not.toContain('u-secret-42');
      expect(outgoing.find((s) => s.kind === 3)!.attributes).toContainEqual({
        key: 'url.full',
        value: { stringValue: expect.stringMatching(/\/orders\/A-1\?key=/) },
      });
      // The request's log line names the trace.
      const logged = server.lines
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { trace_id?: string; route?: string; msg?: string })
        .filter((l) => l.trace_id === root.traceId);
      expect(logged.length).toBeGreaterThan(0);
    } finally {
      await server.stop();
    }
  });

  it('exports nothing and logs no trace id without OTEL_EXPORTER_OTLP_ENDPOINT', async () => {
    const before = spans.length;
    const server = await startServer({ DATABASE_URL: `sqlite://${join(dir, 'untraced.db')}`, OTEL_EXPORTER_OTLP_ENDPOINT: '' });
    try {
      await fetch(`${server.base}/api/v1/agents/shop`, {
        method: 'PUT',
        headers: { 'tenant-id': 'acme', 'content-type': 'application/json' },
        body: JSON.stringify(orderLookupAgent(orders.url)),
      });
      await converse(server.base, 'where is my order');
      await new Promise((r) => setTimeout(r, 300));
      expect(spans.length).toBe(before);
      expect(server.lines.some((l) => l.includes('trace_id'))).toBe(false);
      expect(server.lines.some((l) => l.includes('request completed'))).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
