// One tenant's heavy templates spend its own share of template time, not everyone's.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

const heavy = {
  name: 'Heavy',
  capabilities: [
    {
      name: 'c',
      examples: ['go'],
      phases: [
        { id: 'a', say: '{% for i in (1..9000000) %}{% endfor %}busy' },
        { id: 'b', say: 'Hello {{ user.id }}.', end: 'completed' as const },
      ],
    },
  ],
};

const light = { name: 'Light', capabilities: [{ name: 'c', examples: ['go'], phases: [{ id: 'b', say: 'Hello {{ user.id }}.', end: 'completed' as const }] }] };

describe('template time per tenant', () => {
  const f = appFixture(databases[0], { config: { renderBudget: { timeMs: 50, outputChars: 1_000_000 }, tenantRenderMsPerSecond: 1 } });
  let app: App;
  beforeAll(async () => {
    app = f.app;
    for (const t of ['noisy', 'quiet']) {
      await request(app.app).put('/api/v1/agents/heavy').set('tenant-id', t).send(heavy).expect(200);
      await request(app.app).put('/api/v1/agents/light').set('tenant-id', t).send(light).expect(200);
    }
  });

  it('gives a tenant that spent its share no template time, and the others theirs', async () => {
    const say = (t: string, slug: string) =>
      request(app.app).post(`/api/v1/agents/${slug}/converse`).set({ 'tenant-id': t, 'user-id': 'u1' }).send({ message: 'go' });
    expect((await say('noisy', 'light').expect(200)).body.response.message).toBe('Hello u1.');
    // Four turns of 50 ms spend the burst (four turns' budget); the share refills at 1 ms a second.
    for (let i = 0; i < 5; i++) await say('noisy', 'heavy').expect(200);
    // Out of its share, the tenant's turn is an explicit, audited error: a person takes over, never an empty reply.
    const spent = await say('noisy', 'light').expect(200);
    expect(spent.body.state.status).toBe('escalated');
    expect(spent.body.response.message).not.toBe('');
    const audit = await request(app.app).get(`/api/v1/agents/light/conversations/${spent.body.conversation_id}/audit-logs`).set('tenant-id', 'noisy');
    const error = audit.body.data.find((e: { type: string }) => e.type === 'error').data;
    expect(error.code).toBe('render_budget_exceeded');
    expect(error.message).toMatch(/template time/);
    expect((await say('quiet', 'light').expect(200)).body.response.message).toBe('Hello u1.');
  });
});
