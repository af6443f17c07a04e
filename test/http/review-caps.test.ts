// The review inbox under a flood, on both databases: one conversation adds at most
// REVIEW_MAX_PER_CONVERSATION findings and one agent at most REVIEW_MAX_PER_AGENT_HOUR an hour
// (across replicas through REDIS_URL); what the caps leave out is counted in the inbox.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { testApp } from '../helpers/servers.js';

warnIfPostgresSkipped();

const REDIS_URL = process.env.TEST_REDIS_URL;
const T = { 'tenant-id': 'acme' };
// Anything but a greeting falls to the fallback: a finding each.
const desk = {
  name: 'Desk',
  capabilities: [{ name: 'hello', examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'hi', say: 'Hello.' }] }],
};

const say = async (app: App, message: string, conversation_id?: string) =>
  (await request(app.app).post('/api/v1/agents/desk/converse').set(T).send({ message, conversation_id }).expect(200)).body.conversation_id as string;
const inbox = async (app: App) => (await request(app.app).get('/api/v1/agents/desk/review?limit=100').set(T).expect(200)).body;

eachDatabase('review inbox caps on $name', (database) => {
  const f = appFixture(database, { agents: { desk }, config: { reviewCaps: { perConversation: 3, perAgentHour: 10 } } });

  it('keeps at most three findings of one conversation and counts the rest', async () => {
    let id: string | undefined;
    for (let i = 0; i < 8; i++) id = await say(f.app, `bury the reviewers with message number ${'x'.repeat(i + 1)}`, id);
    const page = await inbox(f.app);
    expect(page.counts.fallback.messages).toBe(3);
    expect(page.capped).toMatchObject({ per_conversation: 5, per_agent_hour: 0 });
  });

  it('keeps at most ten findings of the agent an hour, however many conversations bring them, and counts the rest', async () => {
    for (let i = 0; i < 10; i++) await say(f.app, `a fresh visitor asks about topic ${'y'.repeat(i + 1)}`);
    const page = await inbox(f.app);
    expect(page.counts.fallback.messages).toBe(10);
    expect(page.capped).toMatchObject({ per_conversation: 5, per_agent_hour: 3 });
    // The time filters bound the count too: nothing was left out before today.
    const old = await request(f.app.app).get('/api/v1/agents/desk/review?since=2020-01-01T00:00:00Z&until=2020-01-02T00:00:00Z').set(T).expect(200);
    expect(old.body.capped).toMatchObject({ per_conversation: 0, per_agent_hour: 0, since: '2020-01-01T00:00:00.000Z' });
  });

  describe.skipIf(!REDIS_URL)(`two replicas sharing REDIS_URL${REDIS_URL ? '' : ' (SKIPPED: set TEST_REDIS_URL)'}`, () => {
    const config = { redisUrl: REDIS_URL, reviewCaps: { perConversation: 3, perAgentHour: 6 } };
    const g = appFixture(database, { agents: { desk }, config });
    let second: App;
    beforeAll(async () => {
      second = testApp(g.db, config);
      await Promise.all([g.app.ready(), second.ready()]);
    });
    afterAll(() => second?.close());

    it("counts the agent's hourly findings on both", async () => {
      for (let i = 0; i < 10; i++) await say(i % 2 ? second : g.app, `replica question ${'z'.repeat(i + 1)}`);
      const page = await inbox(g.app);
      expect(page.counts.fallback.messages).toBe(6);
      expect(page.capped).toMatchObject({ per_conversation: 0, per_agent_hour: 4 });
    });
  });
});
