// Training a large agent's router does not hold up requests for other agents.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { testApp } from '../helpers/servers.js';

const words = ['account', 'order', 'card', 'loan', 'flight', 'hotel', 'music', 'weather', 'alarm', 'recipe', 'bill', 'refund', 'password', 'delivery', 'insurance'];

/** 60 capabilities × 60 generated examples: big enough to take a while to train. */
function bigAgent() {
  return {
    name: 'Big',
    capabilities: Array.from({ length: 60 }, (_, c) => ({
      name: `cap_${c}`,
      examples: Array.from({ length: 60 }, (_, e) => `${words[c % words.length]} ${words[(c * 7 + e) % words.length]} request number ${c} variant ${e} ${words[e % words.length]}`),
      phases: [{ id: 'p', say: `capability ${c}` }],
    })),
  };
}

describe('training', () => {
  let app: App;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const created = await databases[0].create();
    drop = created.drop;
    app = testApp(created.db);
    await request(app.app).put('/api/v1/agents/echo').set('tenant-id', 't').send(echoAgent).expect(200);
  });
  afterAll(async () => {
    await app.close();
    await drop();
  });

  it('lets other agents answer while a large agent trains', async () => {
    const finished: string[] = [];
    const put = request(app.app)
      .put('/api/v1/agents/big')
      .set('tenant-id', 't')
      .send(bigAgent())
      .then((r) => {
        finished.push('put');
        return r;
      });
    // Give the PUT time to reach training, then talk to another agent.
    await new Promise((r) => setTimeout(r, 150));
    const talk = request(app.app)
      .post('/api/v1/agents/echo/converse')
      .set('tenant-id', 't')
      .send({ message: 'echo this' })
      .then((r) => {
        finished.push('converse');
        return r;
      });
    const [p, t] = await Promise.all([put, talk]);
    expect(p.status).toBe(200);
    expect(t.status).toBe(200);
    expect(finished).toEqual(['converse', 'put']);
    const r = await request(app.app).post('/api/v1/agents/big/converse').set('tenant-id', 't').send({ message: 'loan flight request number 12 variant 3' });
    expect(r.body.state.capability).toBe('cap_12');
  });
});
