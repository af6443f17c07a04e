// The tamper-evident audit log: a hash chain per conversation, recomputed by the verify endpoint.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { echoAgent, supportAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

const T = { 'tenant-id': 'acme' };

describe.each(databases)('audit chain on $name', (database) => {
  const f = appFixture(database, { echo: echoAgent });

  async function conversation(turns = 3): Promise<string> {
    const id = (await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: 'echo this' })).body.conversation_id;
    for (let i = 0; i < turns; i++) await request(f.app.app).post('/api/v1/agents/echo/converse').set(T).send({ message: `m${i}`, conversation_id: id }).expect(200);
    return id;
  }
  const verify = (id: string) => request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}/audit-logs/verify`).set(T).then((r) => r.body);
  const entries = (id: string) => f.db.knex('audit_entries').where({ conversation_id: id }).orderBy('sequence');

  it('verifies an untouched log', async () => {
    const id = await conversation();
    const n = (await entries(id)).length;
    expect(await verify(id)).toEqual({ conversation_id: id, entries: n, valid: true, first_broken: null });
  });

  it('finds a changed payload', async () => {
    const id = await conversation();
    const row = (await entries(id))[4];
    const data = JSON.parse(row.data);
    await f.db.knex('audit_entries').where({ conversation_id: id, sequence: row.sequence }).update({ data: JSON.stringify({ ...data, forged: true }) });
    expect(await verify(id)).toMatchObject({ valid: false, first_broken: { sequence: row.sequence, reason: 'data_mismatch' } });
  });

  it('finds a payload changed together with its data hash', async () => {
    const id = await conversation();
    const { dataHash } = await import('../../server/src/lib/audit-chain.js');
    const row = (await entries(id))[2];
    const forged = JSON.stringify({ ...JSON.parse(row.data), forged: true });
    await f.db.knex('audit_entries').where({ conversation_id: id, sequence: row.sequence }).update({ data: forged, data_hash: dataHash(forged) });
    expect(await verify(id)).toMatchObject({ valid: false, first_broken: { sequence: row.sequence, reason: 'hash_mismatch' } });
  });

  it('finds a deleted entry and a cut-off tail', async () => {
    const a = await conversation();
    await f.db.knex('audit_entries').where({ conversation_id: a, sequence: 3 }).delete();
    expect(await verify(a)).toMatchObject({ valid: false, first_broken: { sequence: 3, reason: 'sequence_gap' } });
    const b = await conversation();
    const last = (await entries(b)).at(-1);
    await f.db.knex('audit_entries').where({ conversation_id: b, sequence: last.sequence }).delete();
    expect(await verify(b)).toMatchObject({ valid: false, first_broken: { sequence: last.sequence, reason: 'head_mismatch' } });
  });

  it('still verifies after erasure, which keeps the hashes of what it removes', async () => {
    // An action call (to an address the rules refuse) leaves an entry with request data to erase.
    await request(f.app.app).put('/api/v1/agents/support').set(T).send(supportAgent('http://127.0.0.1:9')).expect(200);
    const id = (await request(f.app.app).post('/api/v1/agents/support/converse').set(T).send({ message: 'where is my order' })).body.conversation_id;
    await request(f.app.app).post('/api/v1/agents/support/converse').set(T).send({ message: '123456', conversation_id: id }).expect(200);
    const before = (await entries(id)).find((e) => e.type === 'action_call');
    expect(JSON.parse(before.data).request.url).toContain('/orders/123456');
    await request(f.app.app).delete(`/api/v1/agents/support/conversations/${id}`).set(T).expect(204);
    const after = (await entries(id)).find((e) => e.type === 'action_call');
    expect(JSON.parse(after.data)).toMatchObject({ erased: true });
    expect(after.data).not.toContain('123456');
    const r = await request(f.app.app).get(`/api/v1/agents/support/conversations/${id}/audit-logs/verify`).set(T);
    expect(r.body).toMatchObject({ valid: true, first_broken: null });
  });

  it("answers 404 for another tenant's conversation", async () => {
    const id = await conversation(0);
    const r = await request(f.app.app).get(`/api/v1/agents/echo/conversations/${id}/audit-logs/verify`).set({ 'tenant-id': 'other' });
    expect(r.status).toBe(404);
  });
});
