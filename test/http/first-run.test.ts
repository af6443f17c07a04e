// What new users tripped over: each defect with the test that would have caught it.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { supportAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

const T = { 'tenant-id': 'acme' };

describe.each(databases)('first-run defects on $name', (database) => {
  const f = appFixture(database, { support: supportAgent('http://127.0.0.1:9') });
  const say = (message: string, id?: string) =>
    request(f.app.app).post('/api/v1/agents/support/converse').set(T).send(id ? { message, conversation_id: id } : { message });
  const get = (id: string) => request(f.app.app).get(`/api/v1/agents/support/conversations/${id}`).set(T).then((r) => r.body);

  it('keeps an escalated conversation escalated, with its outcome, phase and slots, when the user writes again', async () => {
    const id = (await say('where is my order')).body.conversation_id;
    for (const m of ['no', 'still no', 'nope']) await say(m, id).expect(200);
    const escalated = await get(id);
    expect(escalated).toMatchObject({ status: 'escalated', outcome: 'escalated' });
    const r = await say('hello? anyone?', id).expect(200);
    expect(r.body.state.status).toBe('escalated');
    const after = await get(id);
    expect(after).toMatchObject({ status: 'escalated', outcome: 'escalated', phase: escalated.phase, capability: escalated.capability, slots: escalated.slots });
    expect(after.turns).toHaveLength(escalated.turns.length + 2);
  });
});
