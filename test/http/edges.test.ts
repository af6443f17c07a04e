// HTTP edges the typed client cannot produce: media types, sizes, malformed JSON, headers, routes.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { testApp } from '../helpers/servers.js';

const sqlite = databases[0];

describe('HTTP edges', () => {
  const f = appFixture(sqlite, { agents: { echo: echoAgent } });
  let app: App;
  const t = { 'tenant-id': 'acme' };
  beforeAll(() => {
    app = f.app;
  });

  const problem = (status: number, code: string) => (res: request.Response) => {
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status, code, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
  };

  it('answers 400 tenant_required without a tenant-id header, on every /api/v1 route', async () => {
    for (const [m, p] of [
      ['post', '/api/v1/agents/echo/converse'],
      ['get', '/api/v1/agents'],
      ['get', '/api/v1/agents/echo/conversations'],
    ] as const) {
      const agent = request(app.app);
      const res = await agent[m](p).send(m === 'post' ? { message: 'hi' } : undefined);
      problem(400, 'tenant_required')(res);
    }
  });

  it('refuses a malformed tenant id', async () => {
    const res = await request(app.app).get('/api/v1/agents').set('tenant-id', 'a b/../c');
    problem(400, 'validation_error')(res);
    expect(res.body.errors).toEqual([{ path: 'header.tenant-id', message: expect.any(String) }]);
  });

  it('answers 415 for a body that is not JSON and 400 for malformed JSON', async () => {
    problem(
      415,
      'unsupported_media_type',
    )(await request(app.app).post('/api/v1/agents/echo/converse').set(t).set('content-type', 'text/plain').send('message=hi'));
    problem(
      400,
      'validation_error',
    )(await request(app.app).post('/api/v1/agents/echo/converse').set(t).set('content-type', 'application/json').send('{"message": '));
    problem(
      400,
      'validation_error',
    )(await request(app.app).post('/api/v1/agents/echo/converse').set(t).set('content-type', 'application/json').send('"just a string"'));
  });

  it('answers 413 over 64 KiB, but takes a large agent definition', async () => {
    problem(
      413,
      'payload_too_large',
    )(
      await request(app.app)
        .post('/api/v1/agents/echo/converse')
        .set(t)
        .send({ message: 'x'.repeat(70 * 1024) }),
    );
    const big = { ...echoAgent, capabilities: [{ ...echoAgent.capabilities[0], examples: Array.from({ length: 20_000 }, (_, i) => `example number ${i}`) }] };
    expect(JSON.stringify(big).length).toBeGreaterThan(64 * 1024);
    const res = await request(app.app).put('/api/v1/agents/big').set(t).send(big);
    expect(res.status).toBe(200);
  });

  it('streams a converse answer only to a caller that prefers text/event-stream, quality values included', async () => {
    const typeFor = async (accept: string | null) => {
      const req = request(app.app).post('/api/v1/agents/echo/converse').set(t);
      if (accept !== null) req.set('accept', accept);
      const res = await req.send({ message: 'hello' });
      expect(res.status).toBe(200);
      return String(res.headers['content-type']).split(';')[0];
    };
    expect(await typeFor(null)).toBe('application/json');
    expect(await typeFor('*/*')).toBe('application/json');
    expect(await typeFor('application/json')).toBe('application/json');
    expect(await typeFor('text/event-stream')).toBe('text/event-stream');
    expect(await typeFor('application/json;q=0.5, text/event-stream')).toBe('text/event-stream');
    expect(await typeFor('TEXT/EVENT-STREAM')).toBe('text/event-stream');
    // Refused by a zero quality, or less preferred than JSON: a plain JSON answer.
    expect(await typeFor('text/event-stream;q=0, application/json')).toBe('application/json');
    expect(await typeFor('text/event-stream;q=0.2, application/json')).toBe('application/json');
  });

  it('answers an unknown route with a 404 problem, and a known one asked with another method with 405 and allow', async () => {
    problem(404, 'not_found')(await request(app.app).get('/nope'));
    problem(404, 'not_found')(await request(app.app).get('/api/v1/agents/echo/nothing-here').set(t));
    const patch = await request(app.app).patch('/api/v1/agents/echo').set(t).send({});
    problem(405, 'method_not_allowed')(patch);
    expect(patch.headers.allow).toBe('DELETE, GET, HEAD, PUT');
    const post = await request(app.app).post('/api/v1/agents/echo/conversations').set(t).send({});
    problem(405, 'method_not_allowed')(post);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect((await request(app.app).delete('/healthz')).headers.allow).toBe('GET, HEAD');
  });

  it('echoes a sane x-request-id and replaces an unusable one', async () => {
    const a = await request(app.app).get('/healthz').set('x-request-id', 'abc-123');
    expect(a.headers['x-request-id']).toBe('abc-123');
    const b = await request(app.app).get('/healthz').set('x-request-id', 'bad id with spaces');
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves health, readiness, the OpenAPI document and the docs page', async () => {
    expect((await request(app.app).get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await request(app.app).get('/readyz')).body).toEqual({ status: 'ok' });
    const doc = await request(app.app).get('/openapi.json');
    expect(doc.body.paths['/api/v1/agents/{slug}/converse'].post).toBeDefined();
    const docs = await request(app.app).get('/docs/');
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('swagger-ui');
  });

  it('serves the OpenAPI document and the docs page naming the server they came from, or PUBLIC_URL', async () => {
    const doc = await request(app.app).get('/openapi.json').set('host', 'switchboard.example:8443');
    expect(doc.body.servers).toEqual([{ url: 'http://switchboard.example:8443', description: 'This server' }]);
    const init = await request(app.app).get('/docs/swagger-ui-init.js').set('host', 'switchboard.example:8443');
    expect(init.text).toContain('"url": "http://switchboard.example:8443"');
    // A host header that is not a host keeps the document's default.
    const odd = await request(app.app).get('/openapi.json').set('host', 'evil"</script>');
    expect(odd.body.servers).toEqual([{ url: 'http://127.0.0.1:3000', description: expect.any(String) }]);
    // A document that names the request's host is never cached for another host.
    for (const path of ['/openapi.json', '/docs/', '/docs/swagger-ui-init.js']) {
      const r = await request(app.app).get(path).set('host', 'switchboard.example:8443');
      expect(r.headers.vary, path).toMatch(/\bHost\b/);
      expect(r.headers['cache-control'], path).toBe('no-store');
    }
    const behind = testApp(f.db, { publicUrl: 'https://api.example.com/switchboard' });
    const fixed = await request(behind.app).get('/openapi.json');
    expect(fixed.body.servers).toEqual([{ url: 'https://api.example.com/switchboard', description: 'This server' }]);
    expect(fixed.headers['cache-control']).toBeUndefined();
    expect((await request(behind.app).get('/docs/')).headers['content-security-policy']).toContain("connect-src 'self' https://api.example.com;");
    await behind.close();
  });

  it('serves /docs under a content security policy, and never in a frame', async () => {
    const docs = await request(app.app).get('/docs/');
    expect(docs.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(docs.headers['x-frame-options']).toBe('DENY');
    // The page runs no inline script: every script is a file of the page's own.
    expect([...docs.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)].every(([, attrs, body]) => /src=/.test(attrs) && body.trim() === '')).toBe(true);
  });

  it('refuses a __proto__ key with 400 naming where it is, and keeps constructor keys inert', async () => {
    const send = (body: string) => request(app.app).post('/api/v1/agents/echo/converse').set(t).set('content-type', 'application/json').send(body);
    const res = await send('{"message":"echo this","context":{"version":"v1","context":{"customAttributes":{"plan":"gold","__proto__":{"polluted":1}}}}}');
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'context.context.customAttributes.__proto__', message: expect.stringContaining('__proto__') }]);
    expect((await send('{"message":"echo this","__proto__":{"polluted":1}}')).body.errors[0].path).toBe('__proto__');
    const ok = await send('{"message":"echo this","context":{"version":"v1","context":{"customAttributes":{"constructor":{"prototype":{"polluted":1}}}}}}');
    expect(ok.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('unexpected failures', () => {
  const f = appFixture(sqlite, { agents: { echo: echoAgent } });
  it('answer 500 internal_error with no internals, and write nothing', async () => {
    const { app, db } = f;
    await db.knex.schema.dropTable('audit_entries');
    const res = await request(app.app).post('/api/v1/agents/echo/converse').set('tenant-id', 'acme').send({ message: 'echo this' });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      type: expect.any(String),
      title: 'Internal Server Error',
      status: 500,
      detail: expect.any(String),
      code: 'internal_error',
      request_id: res.headers['x-request-id'],
    });
    expect(res.text).not.toMatch(/audit_entries|no such table|at .*\.ts/);
    expect(await db.knex('conversations').count({ n: '*' })).toEqual([{ n: 0 }]);
    expect(await db.knex('turns').count({ n: '*' })).toEqual([{ n: 0 }]);
  });
});

describe('readiness without a database', () => {
  it('answers 503 unavailable with retry-after when the database is gone', async () => {
    const created = await sqlite.create();
    const app = testApp(created.db);
    await created.drop();
    const res = await request(app.app).get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('unavailable');
    expect(res.headers['retry-after']).toBeDefined();
    const api = await request(app.app).get('/api/v1/agents').set('tenant-id', 'acme');
    expect(api.status).toBe(503);
    expect(api.body.code).toBe('unavailable');
    await app.close();
  });
});

describe('starting the server', () => {
  it('refuses header auth on a non-loopback address unless told the header can be trusted', async () => {
    const { start } = await import('../../server/src/main.js');
    const { loadConfig } = await import('../../server/src/config.js');
    const config = loadConfig({ LOG_LEVEL: 'silent', HOST: '0.0.0.0', PORT: '0', DATABASE_URL: 'sqlite::memory:' });
    await expect(start(config)).rejects.toThrow(/refusing to listen on 0\.0\.0\.0 with AUTH_MODE=header/);
    const trusted = await start(loadConfig({ LOG_LEVEL: 'silent', HOST: '0.0.0.0', PORT: '0', DATABASE_URL: 'sqlite::memory:', TRUST_TENANT_HEADER: 'true' }));
    expect(trusted.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    await trusted.stop();
  });
});
