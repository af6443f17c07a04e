// One evaluation per tenant at a time, held by the database: concurrent starts on two replicas
// sharing it run one evaluation and refuse the rest with 429. On both databases.
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import type { App } from '../../server/src/app.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { testApp } from '../helpers/servers.js';

warnIfPostgresSkipped();

const T = { 'tenant-id': 'acme' };
const desk = (greeting: string): AgentDefinitionInput => ({
  name: 'Desk',
  capabilities: [
    { name: 'hello', examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'hi', say: greeting }] },
    { name: 'bye', examples: ['bye', 'goodbye', 'see you'], phases: [{ id: 'bye', say: 'Bye.', end: 'completed' }] },
  ],
});

eachDatabase('evaluation starts ($name)', (database) => {
  const f = appFixture(database, { agents: { desk: desk('Hello.') } });
  let replica: App;
  beforeAll(async () => {
    replica = testApp(f.db);
    await request(f.app.app).put('/api/v1/agents/desk?activate=false').set(T).send(desk('Hello there.')).expect(200);
  });
  afterAll(() => replica?.close());

  it('runs one of four concurrent starts and refuses the others with 429', async () => {
    const answers = await Promise.all(
      [f.app, replica, f.app, replica].map((app) => request(app.app).post('/api/v1/agents/desk/versions/2/evaluations').set(T).send({ folds: 2 })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([202, 429, 429, 429]);
    const started = answers.find((a) => a.status === 202)!.body.id as string;
    await (answers.findIndex((a) => a.status === 202) % 2 ? replica : f.app).evaluations.finished(started);
    const listed = await request(f.app.app).get('/api/v1/agents/desk/evaluations').set(T).expect(200);
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([started]);
  });
});
