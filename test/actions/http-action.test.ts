import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpActionRunner } from '../../server/src/actions/http-action.js';
import { HostChecker, isBlockedAddress, literalHost, type HostCheck } from '../../server/src/actions/ssrf.js';
import { startNameServer, type NameServer } from '../helpers/dns.js';
import type { CompiledAction } from '../../server/src/engine/compile.js';
import type { ActionRequest } from '../../server/src/engine/run.js';
import { CompiledTemplate } from '../../server/src/engine/templates.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';

const meta = { tenantId: 'acme', turnIndex: 0, now: () => '2026-11-22T10:00:00.000Z' };

const SECRET = 'super-secret-token';
const masked = <T>(v: T): T =>
  JSON.parse(
    JSON.stringify(v ?? null)
      .split(SECRET)
      .join('***'),
  ) ?? undefined;

/** A request as the engine renders it: for the wire, and with the secret masked for the record. */
function req(url: string, opts: Partial<Pick<ActionRequest, 'method' | 'headers' | 'body'>> & { retries?: number; timeoutMs?: number } = {}): ActionRequest {
  const action: CompiledAction = {
    name: 'act',
    method: opts.method ?? 'GET',
    url: CompiledTemplate.parse(url),
    headers: [],
    body: null,
    secrets: ['TOKEN'],
    timeoutMs: opts.timeoutMs ?? 2000,
    retries: opts.retries ?? 0,
    save: [],
    description: null,
    parameters: null,
    validate: null,
  };
  const headers = opts.headers ?? {};
  return {
    kind: 'action',
    action,
    method: opts.method ?? 'GET',
    url,
    headers,
    body: opts.body,
    masked: { url: masked(url), headers: masked(headers), body: masked(opts.body) },
    secretValues: [SECRET],
  };
}

describe('HTTP actions', () => {
  let allowed: Backend;
  let other: Backend;
  let flaky = 0;
  let runner: HttpActionRunner;

  beforeAll(async () => {
    allowed = await startBackend((r, res, body) => {
      const url = r.url ?? '';
      if (url.startsWith('/echo')) return json(res, 200, { method: r.method, body: body ? JSON.parse(body) : null, auth: r.headers.authorization });
      if (url.startsWith('/flaky')) return ++flaky % 2 ? json(res, 503, { error: 'busy' }) : json(res, 200, { ok: true });
      if (url.startsWith('/missing')) return json(res, 404, { error: 'no' });
      if (url.startsWith('/slow')) return void setTimeout(() => json(res, 200, {}), 500);
      if (url.startsWith('/huge')) return json(res, 200, { data: 'x'.repeat(200_000) });
      if (url.startsWith('/big')) return json(res, 200, { data: 'y'.repeat(10_000) });
      if (url.startsWith('/redirect')) {
        res.statusCode = 302;
        res.setHeader('location', `${other.url}/stolen`);
        return res.end();
      }
      json(res, 200, {});
    });
    other = await startBackend((_r, res) => json(res, 200, { secret: 'internal data' }));
    runner = new HttpActionRunner({
      allowedHosts: { acme: [`127.0.0.1:${allowed.port}`] },
      maxResponseBytes: 100_000,
      retryBaseMs: 5,
    });
  });
  afterAll(async () => {
    await runner.close();
    await allowed.close();
    await other.close();
  });

  it('sends the method, headers and JSON body, and parses the JSON answer', async () => {
    const { result, audit } = await runner.run(
      req(`${allowed.url}/echo?t=super-secret-token`, {
        method: 'POST',
        headers: { authorization: 'Bearer super-secret-token' },
        body: { a: 1, note: 'token super-secret-token' },
      }),
      meta,
    );
    // The server echoed the secret: the flow (and so the reply) gets the mask, not the secret.
    expect(result).toEqual({ ok: true, status: 200, body: { method: 'POST', body: { a: 1, note: 'token ***' }, auth: 'Bearer ***' } });
    expect(audit.type).toBe('action_call');
    expect(audit.data).toMatchObject({ action: 'act', outcome: 'ok', attempts: 1 });
    expect(JSON.stringify(audit)).not.toContain('super-secret-token');
    expect((audit.data.request as { url: string }).url).toBe(`${allowed.url}/echo?t=***`);
  });

  it('masks a secret an echoing server returns URL-encoded, base64-encoded or upper-cased', async () => {
    const echo = await startBackend((r, res) =>
      json(res, 200, { a: encodeURIComponent(`${SECRET}/x`), b: Buffer.from(SECRET).toString('base64'), c: SECRET.toUpperCase(), path: r.url }),
    );
    const local = new HttpActionRunner({ allowedHosts: { acme: [`127.0.0.1:${echo.port}`] }, maxResponseBytes: 100_000 });
    try {
      const { result, audit } = await local.run(req(`${echo.url}/p?t=${SECRET}`), meta);
      expect(JSON.stringify(result)).not.toMatch(new RegExp(`${SECRET}|${Buffer.from(SECRET).toString('base64')}|${SECRET.toUpperCase()}`));
      expect(JSON.stringify(audit)).not.toContain(SECRET);
    } finally {
      await local.close();
      await echo.close();
    }
  });

  it("grants private hosts per tenant: another tenant's allowance does not open the host", async () => {
    const before = allowed.requests.length;
    const { result, audit } = await runner.run(req(`${allowed.url}/echo`), { ...meta, tenantId: 'mallory' });
    expect(result.ok).toBe(false);
    expect(audit.data).toMatchObject({ outcome: 'blocked' });
    expect(allowed.requests).toHaveLength(before);
    expect((await runner.run(req(`${allowed.url}/echo`), meta)).result.ok).toBe(true);
    expect(allowed.requests).toHaveLength(before + 1);
  });

  it('reports an unknown host and a blocked one in the same words, with no DNS answer', async () => {
    const a = (await runner.run(req(`http://no-such-host.invalid/x`), meta)).audit.data;
    const b = (await runner.run(req(`http://localhost:${other.port}/x`), meta)).audit.data;
    expect(a.outcome).toBe('blocked');
    expect(b.outcome).toBe('blocked');
    expect(String(a.error).replace('no-such-host.invalid', 'H')).toBe(String(b.error).replace('localhost', 'H'));
    expect(String(b.error)).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it('never connects to a loopback host that is not allow-listed, by address or by name', async () => {
    for (const url of [`${other.url}/x`, `http://localhost:${other.port}/x`, `http://[::ffff:127.0.0.1]:${other.port}/x`]) {
      const { result, audit } = await runner.run(req(url, { retries: 2 }), meta);
      expect(result.ok).toBe(false);
      expect(audit.data).toMatchObject({ outcome: 'blocked', attempts: 1, response: null });
    }
    expect(other.requests).toHaveLength(0);
  });

  it('does not follow a redirect to a blocked address', async () => {
    const { audit } = await runner.run(req(`${allowed.url}/redirect`), meta);
    expect(audit.data.outcome).toBe('blocked');
    expect(other.requests).toHaveLength(0);
  });

  it('retries a 5xx with backoff and reports the attempts', async () => {
    flaky = 0;
    const { result, audit } = await runner.run(req(`${allowed.url}/flaky`, { retries: 2 }), meta);
    expect(result).toEqual({ ok: true, status: 200, body: { ok: true } });
    expect(audit.data.attempts).toBe(2);
  });

  it('does not retry a 4xx', async () => {
    const { result, audit } = await runner.run(req(`${allowed.url}/missing`, { retries: 3 }), meta);
    expect(result).toEqual({ ok: false, status: 404, body: { error: 'no' } });
    expect(audit.data).toMatchObject({ outcome: 'http_error', attempts: 1, response: { status: 404 } });
  });

  it('cuts a call at its timeout, on every attempt', async () => {
    // The backend answers after 500 ms: both attempts are cut at 50 ms and none gets its answer.
    const { audit, result } = await runner.run(req(`${allowed.url}/slow`, { timeoutMs: 50, retries: 1 }), meta);
    expect(audit.data).toMatchObject({ outcome: 'timeout', attempts: 2, response: null });
    expect(result.ok).toBe(false);
  });

  it('refuses a response over the size limit', async () => {
    const { result, audit } = await runner.run(req(`${allowed.url}/huge`, { retries: 2 }), meta);
    expect(result.ok).toBe(false);
    expect(audit.data).toMatchObject({ outcome: 'http_error', attempts: 1 });
    expect(audit.data.error).toMatch(/larger than 100000 bytes/);
  });

  it('cuts bodies in the audit entry at 4 KiB but hands the whole body to the flow', async () => {
    const { result, audit } = await runner.run(req(`${allowed.url}/big`), meta);
    expect((result.body as { data: string }).data).toHaveLength(10_000);
    const logged = (audit.data.response as { body: string }).body;
    expect(typeof logged).toBe('string');
    expect(logged.length).toBeLessThan(4200);
    expect(logged).toMatch(/cut at 4096/);
  });

  it('refuses URLs that are not http or https', async () => {
    const { audit } = await runner.run(req('file:///etc/passwd'), meta);
    expect(audit.data.outcome).toBe('blocked');
  });
});

describe('blocked address ranges', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.20.0.1', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['::ffff:10.0.0.1', true],
    ['fd00:ec2::254', true],
    ['fe80::1', true],
    ['::7f00:1', true], // IPv4-compatible 127.0.0.1
    ['::ffff:7f00:1', true], // IPv4-mapped 127.0.0.1, hex form
    ['2002:7f00:1::1', true], // 6to4 around 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true], // Teredo
    ['64:ff9b:1::a00:1', true],
    // Special-purpose ranges a hand-kept list had missed: 6to4 relay anycast, AS112, AMT,
    // ORCHIDv2, SRv6 SIDs, AS112 over IPv6.
    ['192.88.99.1', true],
    ['192.175.48.1', true],
    ['192.52.193.1', true],
    ['2001:20::1', true],
    ['5f00::1', true],
    ['2620:4f:8000::1', true],
    ['::ffff:192.88.99.1', true],
    ['not an address', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['2606:4700:4700::1111', false],
  ])('%s blocked: %s', (ip, blocked) => {
    expect(isBlockedAddress(ip)).toBe(blocked);
  });
});

describe('hosts named in a definition, checked ahead of any call', () => {
  it.each([
    ['http://127.0.0.1:3001/orders/{{ slots.id }}', { host: '127.0.0.1', port: '3001', shown: '127.0.0.1:3001' }],
    ['https://api.example.com/v1?x={{ slots.x }}', { host: 'api.example.com', port: '443', shown: 'api.example.com' }],
    ['http://[::1]:8080/x', { host: '[::1]', port: '8080', shown: '[::1]:8080' }],
    ['{{ secrets.BASE }}/orders', null],
    ['https://{{ slots.tenant }}.example.com/x', null],
    ['ftp://example.com/x', null],
  ])('%s names %j', (url, expected) => {
    expect(literalHost(url)).toEqual(expected);
  });

  let dns: NameServer;
  let blackHole: NameServer;
  beforeAll(async () => {
    dns = await startNameServer({ names: { 'api.example.com': '93.184.216.34', 'intranet.example.com': '10.1.2.3' } });
    blackHole = await startNameServer({ blackHole: true });
  });
  afterAll(async () => {
    await dns?.close();
    await blackHole?.close();
  });
  const result = (r: HostCheck) => (r.result === 'not_checked' ? `not_checked: ${r.why}` : r.result);

  it('answers as a call would: granted, private, unknown, and remembers what the name server said', async () => {
    const hosts = new HostChecker({ servers: [dns.address], timeoutMs: 1000 });
    const check = (grants: string[], host: string, port: string) => hosts.check('t', grants, host, port).then(result);
    expect(await check([], '127.0.0.1', '3001')).toBe('unreachable');
    expect(await check(['127.0.0.1:3001'], '127.0.0.1', '3001')).toBe('reachable');
    expect(await check(['127.0.0.1:3001'], '127.0.0.1', '3002')).toBe('unreachable');
    expect(await check(['localhost'], 'localhost', '80')).toBe('reachable');
    expect(await check([], 'localhost', '80')).toBe('unreachable');
    expect(await check([], 'api.example.com', '443')).toBe('reachable');
    expect(await check([], 'intranet.example.com', '443')).toBe('unreachable');
    expect(await check(['intranet.example.com'], 'intranet.example.com', '443')).toBe('reachable');
    expect(await check([], 'no-such-host.example.com', '443')).toBe('unreachable');
    // Asked once each (A and AAAA), however often they were checked.
    expect(dns.queries.filter((q) => q === 'api.example.com')).toHaveLength(2);
    expect(dns.queries.filter((q) => q === 'intranet.example.com')).toHaveLength(2);
    expect(dns.queries.filter((q) => q === 'localhost')).toHaveLength(0);
  });

  it('says "not checked", never unreachable, when the name server does not answer or the bounds are reached', async () => {
    const hosts = new HostChecker({ servers: [blackHole.address], timeoutMs: 200, maxLookups: 3, maxTenantLookups: 2 });
    const names = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i}.example.com`);
    const greedy = await Promise.all(names(4, 'greedy').map((h) => hosts.check('greedy', [], h, '443').then(result)));
    // The tenant's two lookups wait for a name server that never answers; its others are not made.
    expect(greedy.filter((r) => r.startsWith('not_checked: the name server did not answer'))).toHaveLength(2);
    expect(greedy.filter((r) => r.startsWith('not_checked: too many host checks under way'))).toHaveLength(2);
    // While one tenant holds lookups, another still has its share of the process's.
    const a = names(2, 'first').map((h) => hosts.check('a', [], h, '443').then(result));
    const b = hosts.check('b', [], 'other.example.com', '443').then(result);
    const c = hosts.check('c', [], 'third.example.com', '443').then(result);
    const all = await Promise.all([...a, b, c]);
    expect(all.filter((r) => r.startsWith('not_checked: the name server did not answer'))).toHaveLength(3);
    expect(all.filter((r) => r.startsWith('not_checked: too many host checks under way'))).toHaveLength(1);
    expect(all.every((r) => r !== 'unreachable')).toBe(true);
  });

  it("bounds a call's own lookup by the action's timeout", async () => {
    const runner = new HttpActionRunner({ allowedHosts: {}, maxResponseBytes: 1_000_000, retryBaseMs: 10, lookup: () => new Promise(() => undefined) });
    try {
      const started = performance.now();
      const r = await runner.run(req('http://never.example.com/x', { timeoutMs: 300 }), meta);
      expect(r.result.ok).toBe(false);
      expect(r.audit.data.outcome).toBe('timeout');
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await runner.close();
    }
  });
});
