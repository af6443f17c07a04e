// The tenant model over HTTP (docs/security.md): a tenant's definition reaches only the secrets
// and private hosts granted to it, cannot put a secret anywhere a person reads, and cannot take
// more than its share; hostile input gets a 4xx, the same on every database.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { echoAgent } from '../helpers/agents.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';

warnIfPostgresSkipped();

const ACME = { 'tenant-id': 'acme' };
const MALLORY = { 'tenant-id': 'mallory' };
const OPERATOR_SECRET = 'op-secret-Value-123';
const KEY = randomBytes(32).toString('base64');

/** An agent whose one action sends `url` and `headers`, and says what the action answered. */
const probe = (url: string, headers: Record<string, string> = {}): AgentDefinitionInput => ({
  name: 'Probe',
  capabilities: [
    {
      name: 'c',
      examples: ['go'],
      phases: [
        { id: 'ask', say: 'Value?', collect: { slot: 'v', type: 'text' } },
        { id: 'call', call: 'a', on_error: 'failed' },
        { id: 'said', say: 'Got {{ actions.a.body.url }} {{ actions.a.body.auth }}', end: 'completed' },
        { id: 'failed', say: 'Failed.', end: 'completed' },
      ],
    },
  ],
  actions: { a: { type: 'http', method: 'GET', url, headers } },
});

let echo: Backend;
beforeAll(async () => {
  // Echoes what it received, as an attacker-friendly server would.
  echo = await startBackend((req, res) => json(res, 200, { url: req.url, auth: req.headers.authorization ?? null }));
});
afterAll(async () => echo?.close());

eachDatabase('the tenant model on $name', (database) => {
  const f = appFixture(database, {
    agents: { echo: echoAgent },
    config: {
      secrets: { OP: { value: OPERATOR_SECRET, tenants: ['acme'] } },
      secretsKey: Buffer.from(KEY, 'base64'),
      actionAllowedHosts: { acme: ['127.0.0.1'], mallory: ['127.0.0.1'] },
      sseLimits: { perTenant: 3, perConversation: 2 },
    },
  });
  const put = (slug: string, def: unknown, h = ACME) =>
    request(f.app.app)
      .put(`/api/v1/agents/${slug}`)
      .set(h)
      .send(def as object);
  const talk = async (slug: string, value: string, h = ACME) => {
    const first = await request(f.app.app).post(`/api/v1/agents/${slug}/converse`).set(h).send({ message: 'go' }).expect(200);
    const r = await request(f.app.app)
      .post(`/api/v1/agents/${slug}/converse`)
      .set(h)
      .send({ message: value, conversation_id: first.body.conversation_id })
      .expect(200);
    const audit = await request(f.app.app).get(`/api/v1/agents/${slug}/conversations/${first.body.conversation_id}/audit-logs`).set(h).expect(200);
    return {
      reply: r.body.response.message as string,
      id: first.body.conversation_id as string,
      audit: audit.body.data as { type: string; data: Record<string, unknown> }[],
    };
  };

  describe('secrets', () => {
    it('a secret granted to another tenant reads as one that does not exist, and is never sent', async () => {
      await put('steal', probe(`${echo.url}/x?t={{ secrets.OP }}`), MALLORY).expect(200);
      await put('unknown', probe(`${echo.url}/x?t={{ secrets.NOPE }}`), MALLORY).expect(200);
      const before = echo.requests.length;
      const a = await talk('steal', 'v', MALLORY);
      const b = await talk('unknown', 'v', MALLORY);
      expect(echo.requests).toHaveLength(before);
      expect(a.reply).toBe('Failed.');
      const msg = (x: typeof a) => x.audit.find((e) => e.data.code === 'secret_unavailable')!.data.message;
      expect(String(msg(a)).replace('OP', 'N')).toBe(String(msg(b)).replace('NOPE', 'N'));
    });

    it('refuses definitions that transform a secret, so no filter can carry it out', async () => {
      for (const t of [
        '{{ secrets.OP | upcase }}',
        "{{ secrets.OP | split: '' | join: '.' }}",
        '{{ secrets.OP | base64_encode }}',
        '{{ secrets.OP | slice: 0, 10 }}',
      ]) {
        const r = await put('transform', probe(`${echo.url}/x?t=${t}`));
        expect(r.status, t).toBe(400);
        expect(r.body.errors.map((e: { path: string }) => e.path)).toContain('actions.a.url');
      }
    });

    it('an echoing host puts no secret in the reply, the turns, the events or the audit log', async () => {
      await put('echoer', probe(`${echo.url}/x?t={{ secrets.OP }}`, { authorization: 'Bearer {{ secrets.OP }}' })).expect(200);
      const { reply, id, audit } = await talk('echoer', 'v');
      expect(echo.requests.at(-1)!.headers.authorization).toBe(`Bearer ${OPERATOR_SECRET}`);
      expect(reply).toContain('***');
      const everything = JSON.stringify([
        reply,
        audit,
        (await request(f.app.app).get(`/api/v1/agents/echoer/conversations/${id}`).set(ACME)).body,
        await f.db.knex('conversation_events').where({ conversation_id: id }),
        await f.db.knex('conversations').where({ id }),
      ]);
      expect(everything).not.toContain(OPERATOR_SECRET);
      expect(everything).not.toContain(encodeURIComponent(OPERATOR_SECRET));
    });

    it("keeps a tenant's own secrets write-only, encrypted at rest, and to itself", async () => {
      const value = 'tenant-own-Secret-42';
      await request(f.app.app).put('/api/v1/secrets/MINE').set(ACME).send({ value }).expect(204);
      const listed = await request(f.app.app).get('/api/v1/secrets').set(ACME).expect(200);
      expect(listed.body.data.map((s: { name: string }) => s.name)).toEqual(['MINE']);
      expect(JSON.stringify(listed.body)).not.toContain(value);
      const rows = await f.db.knex('tenant_secrets');
      expect(JSON.stringify(rows)).not.toContain(value);
      expect(JSON.stringify(rows)).not.toContain(Buffer.from(value).toString('base64'));
      // A row copied to another tenant does not decrypt there (tenant and name are bound in).
      await f.db.knex('tenant_secrets').insert({ ...rows[0], tenant_id: 'mallory' });

      await put('own', probe(`${echo.url}/own?t={{ secrets.MINE }}`)).expect(200);
      await talk('own', 'v');
      expect(echo.requests.at(-1)!.url).toBe(`/own?t=${value}`);
      await put('own', probe(`${echo.url}/own?t={{ secrets.MINE }}`), MALLORY).expect(200);
      const before = echo.requests.length;
      expect((await talk('own', 'v', MALLORY)).reply).toBe('Failed.');
      expect(echo.requests).toHaveLength(before);

      await request(f.app.app).delete('/api/v1/secrets/MINE').set(ACME).expect(204);
      await request(f.app.app).delete('/api/v1/secrets/MINE').set(ACME).expect(404);
      expect((await request(f.app.app).put('/api/v1/secrets/bad-name').set(ACME).send({ value: 'x' })).status).toBe(400);
    });
  });

  describe('requests an action sends', () => {
    it('puts slot values into the URL as one encoded segment or value', async () => {
      await put('path', probe(`${echo.url}/users/{{ slots.v }}/profile`)).expect(200);
      await talk('path', '../../admin/delete?all=1#');
      expect(echo.requests.at(-1)!.url).toBe('/users/..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23/profile');
    });
  });

  describe('what a turn may say', () => {
    it('caps the reply at MAX_REPLY_BYTES, in the answer and in the stored turn', async () => {
      const loud = {
        name: 'Loud',
        capabilities: [{ name: 'c', examples: ['go'], phases: [{ id: 'a', say: '{% for i in (1..200000) %}0123456789{% endfor %}', end: 'completed' }] }],
      };
      await put('loud', loud).expect(200);
      const r = await request(f.app.app).post('/api/v1/agents/loud/converse').set(ACME).send({ message: 'go' }).expect(200);
      expect(Buffer.byteLength(r.body.response.message)).toBeLessThanOrEqual(64 * 1024);
      const turns = await f.db.knex('turns').where({ conversation_id: r.body.conversation_id });
      for (const t of turns) expect(Buffer.byteLength(t.message)).toBeLessThanOrEqual(64 * 1024);
    });
  });

  describe('event streams', () => {
    it('caps streams per conversation and per tenant with 429', async () => {
      const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(ACME).send({ message: 'echo this' })).body.conversation_id;
      const server = f.app.app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1/agents/echo/conversations`;
      const controllers: AbortController[] = [];
      const open = async (cid: string) => {
        const c = new AbortController();
        controllers.push(c);
        return fetch(`${base}/${cid}/events`, { headers: ACME, signal: c.signal });
      };
      try {
        expect((await open(id)).status).toBe(200);
        expect((await open(id)).status).toBe(200);
        const third = await open(id);
        expect(third.status).toBe(429);
        expect(((await third.json()) as { code: string }).code).toBe('rate_limited');
        const other = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(ACME).send({ message: 'echo this' })).body.conversation_id;
        expect((await open(other)).status).toBe(200);
        expect((await open(other)).status).toBe(429); // the tenant's third stream
      } finally {
        for (const c of controllers) c.abort();
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      }
    });

    it('reads each commit once for all the streams of a conversation', async () => {
      await f.app.store.eventLog.listen({ warn: () => undefined }); // PostgreSQL: hear commits through LISTEN
      const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(ACME).send({ message: 'echo this' })).body.conversation_id;
      const server = f.app.app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1/agents/echo/conversations/${id}/events`;
      const { openSse } = await import('../helpers/sse.js');
      const streams = [await openSse(url, ACME), await openSse(url, ACME)];
      const store = f.app.store.eventLog;
      const original = store.events.bind(store);
      let reads = 0;
      store.events = (...args: Parameters<typeof original>) => {
        reads++;
        return original(...args);
      };
      try {
        await request(f.app.app).post('/api/v1/agents/echo/converse').set(ACME).send({ message: 'hello', conversation_id: id }).expect(200);
        for (const s of streams) expect((await s.take(2)).map((e) => e.event)).toEqual(['turn.created', 'turn.created']);
        // One read that finds the row and one that finds nothing more, whatever the number of streams.
        expect(reads).toBeLessThanOrEqual(2);
      } finally {
        store.events = original;
        for (const s of streams) s.close();
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      }
    });

    it('numbers events per conversation: ids say nothing of other tenants', async () => {
      const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(ACME).send({ message: 'echo this' })).body.conversation_id;
      const rows = await f.db.knex('conversation_events').where({ conversation_id: id });
      expect(rows.map((r) => Number(r.seq))).toEqual([1]);
      expect(await f.app.store.eventLog.lastEventPosition('acme', id)).toMatchObject({ row: 1 });
    });
  });

  describe('hostile input', () => {
    const converse = (h: Record<string, string> = ACME) => request(f.app.app).post('/api/v1/agents/echo/converse').set(h);

    it('refuses compressed bodies with 415', async () => {
      for (const enc of ['gzip', 'br', 'deflate']) {
        const r = await converse({ ...ACME, 'content-encoding': enc, 'content-type': 'application/json' }).send(JSON.stringify({ message: 'hi' }));
        expect(r.status, enc).toBe(415);
        expect(r.body.code).toBe('unsupported_media_type');
      }
    });

    it('refuses JSON nested deeper than 64 levels, in a message body and in a definition', async () => {
      const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
      const r = await converse({ ...ACME, 'content-type': 'application/json' }).send(
        `{"message":"hi","context":{"version":"v1","context":{"customAttributes":{"x":${deep(30_000)}}}}}`,
      );
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('validation_error');
      const def = JSON.stringify(probe(`${echo.url}/x`)).replace('"method":"GET"', `"method":"POST","body":${deep(3000)}`);
      const d = await request(f.app.app)
        .put('/api/v1/agents/deep')
        .set({ ...ACME, 'content-type': 'application/json' })
        .send(def);
      expect(d.status).toBe(400);
    });

    it('refuses time filters with impossible offsets', async () => {
      for (const t of ['2026-01-01T00:00:00+99:99', '2026-01-01T00:00:00-24:00', '2026-01-01T00:00:00+9999']) {
        const r = await request(f.app.app).get('/api/v1/agents/echo/conversations').query({ created_after: t }).set(ACME);
        expect(r.status, t).toBe(400);
      }
    });

    it('refuses NUL characters everywhere, and stores nothing', async () => {
      const before = Number((await f.db.knex('turns').count({ n: '*' }).first())!.n);
      expect((await converse().send({ message: 'a\u0000b' })).status).toBe(400);
      expect((await converse().send({ message: 'hi', context: { version: 'v1', context: { identity: { user_id: 'u\u0000' } } } })).status).toBe(400);
      expect(
        (await converse({ ...ACME, 'user-id': 'ok' }).send({ message: 'hi', context: { version: 'v1', context: { customAttributes: { 'k\u0000': 1 } } } }))
          .status,
      ).toBe(400);
      expect((await request(f.app.app).get('/api/v1/agents/echo/conversations?user_id=a%00b').set(ACME)).status).toBe(400);
      expect((await request(f.app.app).delete('/api/v1/users/a%00b/conversations').set(ACME)).status).toBe(400);
      const id = (await converse().send({ message: 'echo this' })).body.conversation_id;
      const op = await request(f.app.app).post(`/api/v1/agents/echo/conversations/${id}/messages`).set(ACME).send({ message: 'x\u0000' });
      expect(op.status).toBe(400);
      expect(Number((await f.db.knex('turns').count({ n: '*' }).first())!.n)).toBe(before + 2);
    });

    it('creates one agent from eight concurrent first PUTs of a slug', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, () => put('racy', echoAgent)));
      expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    });

    it('counts the message limit in characters, not UTF-16 units', async () => {
      const emoji = '😀'.repeat(4000); // 8,000 UTF-16 units
      expect((await converse().send({ message: emoji })).status).toBe(200);
      expect((await converse().send({ message: `${emoji}😀` })).status).toBe(400);
    });
  });

  describe('idempotency', () => {
    it('binds a key to its user: another user with the same key and body gets a conversation of its own', async () => {
      const body = { message: 'echo this' };
      const a = await converse2('alice', body);
      const again = await converse2('alice', body);
      const b = await converse2('bob', body);
      expect(again.body.conversation_id).toBe(a.body.conversation_id);
      expect(b.status).toBe(200);
      expect(b.body.conversation_id).not.toBe(a.body.conversation_id);
    });
    const converse2 = (user: string, body: object) =>
      request(f.app.app)
        .post('/api/v1/agents/echo/converse')
        .set({ ...ACME, 'user-id': user, 'idempotency-key': 'same-key' })
        .send(body);
  });
});
