// Training a large agent's router does not hold up requests for other agents.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createApp, type App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { testConfig } from '../helpers/servers.js';
import { waitUntil } from '../helpers/wait.js';

const words = [
  'account',
  'order',
  'card',
  'loan',
  'flight',
  'hotel',
  'music',
  'weather',
  'alarm',
  'recipe',
  'bill',
  'refund',
  'password',
  'delivery',
  'insurance',
];

/** 60 capabilities × 60 generated examples: big enough to take a while to train. */
function bigAgent() {
  return {
    name: 'Big',
    capabilities: Array.from({ length: 60 }, (_, c) => ({
      name: `cap_${c}`,
      examples: Array.from(
        { length: 60 },
        (_, e) => `${words[c % words.length]} ${words[(c * 7 + e) % words.length]} request number ${c} variant ${e} ${words[e % words.length]}`,
      ),
      phases: [{ id: 'p', say: `capability ${c}` }],
    })),
  };
}

describe('training', () => {
  const f = appFixture(databases[0], { agents: { echo: echoAgent }, tenant: 't' });
  let app: App;
  beforeAll(() => {
    app = f.app;
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
    // Once the PUT is training, talk to another agent.
    await waitUntil('the large agent to start training', () => app.training.runningFor('t') > 0);
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

describe('training budgets', () => {
  const f = appFixture(databases[0], { config: { training: { timeoutMs: 30_000, memoryMb: 64, workers: 1 }, routerCacheMb: 2 } });
  let app: App;
  beforeAll(() => {
    app = f.app;
  });

  it('refuses a definition whose router would need more memory than the budget, and stores nothing', async () => {
    // 400 capabilities × 30 distinct examples: tens of thousands of features × 400 classes.
    const huge = {
      name: 'Huge',
      capabilities: Array.from({ length: 400 }, (_, c) => ({
        name: `c${c}`,
        examples: Array.from({ length: 30 }, (_, e) => `w${c}q${e % 10} v${c}q${(e + 3) % 10} u${c}q${(e + 7) % 10}`),
        phases: [{ id: 'p', say: 'x' }],
      })),
    };
    const r = await request(app.app).put('/api/v1/agents/huge').set('tenant-id', 'noisy').send(huge);
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('training_budget_exceeded');
    expect(r.body.detail).toMatch(/MiB/);
    expect((await request(app.app).get('/api/v1/agents/huge').set('tenant-id', 'noisy')).status).toBe(404);
  });

  it('refuses a definition that trains longer than the time budget, and the server answers meanwhile', async () => {
    // A worker whose training of this definition never ends (test/fixtures): deterministic, however fast the machine.
    const d = await databases[0].create();
    const slow = createApp(testConfig({ training: { timeoutMs: 2000, memoryMb: 1024, workers: 1 } }), {
      db: d.db,
      logger: pino({ level: 'silent' }),
      trainingWorkerUrl: new URL('../fixtures/blocking-training-worker.mjs', import.meta.url),
    });
    try {
      const blocking = { ...echoAgent, name: 'Blocks', capabilities: [{ ...echoAgent.capabilities[0], name: 'block' }] };
      const put = request(slow.app).put('/api/v1/agents/big').set('tenant-id', 'noisy').send(blocking);
      const health = await request(slow.app).get('/healthz');
      expect(health.status).toBe(200);
      const r = await put;
      expect(r.status).toBe(422);
      expect(r.body.detail).toMatch(/longer than 2000 ms/);
      expect((await request(slow.app).get('/api/v1/agents/big').set('tenant-id', 'noisy')).status).toBe(404);
      // The pool replaced the stopped worker: the next definition trains.
      await request(slow.app).put('/api/v1/agents/echo').set('tenant-id', 'noisy').send(echoAgent).expect(200);
    } finally {
      await slow.close(1000);
      await d.drop();
    }
  });

  it('bounds the cache of compiled versions by bytes, and an evicted version still answers', async () => {
    // Each of these weighs about 1.2 MiB compiled (with the background class): a 2 MiB cache keeps one.
    const mid = {
      name: 'Mid',
      capabilities: Array.from({ length: 20 }, (_, c) => ({
        name: `cap_${c}`,
        examples: Array.from({ length: 30 }, (_, e) => `${words[c % words.length]} ${words[(c * 7 + e) % words.length]} request number ${c} variant ${e}`),
        phases: [{ id: 'p', say: `capability ${c}` }],
      })),
    };
    for (let i = 0; i < 3; i++) {
      await request(app.app).put(`/api/v1/agents/mid-${i}`).set('tenant-id', 't').send(mid).expect(200);
      expect(app.agents.cachedBytes).toBeGreaterThan(0);
      expect(app.agents.cachedBytes).toBeLessThanOrEqual(2 * 1024 * 1024);
    }
    const r = await request(app.app)
      .post('/api/v1/agents/mid-0/converse')
      .set('tenant-id', 't')
      .send({ message: 'password password request number 12 variant 3' });
    expect(r.body.state.capability).toBe('cap_12');
  });
});

describe('the training pool', () => {
  it('ends a worker that has been idle, and trains on a fresh one afterwards', async () => {
    const { TrainingPool } = await import('../../server/src/service/agents/training.js');
    const pool = new TrainingPool({ timeoutMs: 30_000, memoryMb: 256, workers: 1, idleMs: 200 });
    const caps = bigAgent()
      .capabilities.slice(0, 5)
      .map((c) => ({ name: c.name, examples: c.examples }));
    try {
      await pool.train('a', caps, null, false);
      expect(pool.workers).toBe(1);
      // A training within the idle time reuses the worker.
      await pool.train('a', caps, null, false);
      expect(pool.workers).toBe(1);
      await waitUntil('the idle worker to end', () => pool.workers === 0);
      const again = await pool.train('b', caps, null, false);
      expect(again.score('loan flight request number 3 variant 3').scores[0].name).toBe('cap_3');
      expect(pool.workers).toBe(1);
    } finally {
      await pool.close();
    }
  });

  it('trains in a process started with flags a worker refuses (--expose-gc)', async () => {
    const { execFileSync } = await import('node:child_process');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const file = `${mkdtempSync(`${tmpdir()}/training-flags-`)}/train.mts`;
    const script = [
      `const { TrainingPool } = await import(${JSON.stringify(new URL('../../server/src/service/agents/training.ts', import.meta.url).href)});`,
      'const pool = new TrainingPool({ timeoutMs: 30000, memoryMb: 256, workers: 1 });',
      "const caps = [{ name: 'a', examples: ['track my parcel', 'where is my order'] }, { name: 'b', examples: ['refund my money', 'I was charged twice'] }];",
      "const r = await pool.train('t', caps, null);",
      "console.log(r.score('where is my parcel').scores[0].name);",
      'await pool.close();',
    ].join('\n');
    writeFileSync(file, script);
    const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', file], {
      cwd: new URL('../..', import.meta.url),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(out.trim()).toBe('a');
  });

  it('trains one definition per tenant at a time, while other tenants use the other workers', async () => {
    const { TrainingPool } = await import('../../server/src/service/agents/training.js');
    const pool = new TrainingPool({ timeoutMs: 30_000, memoryMb: 512, workers: 2 });
    const caps = bigAgent()
      .capabilities.slice(0, 30)
      .map((c) => ({ name: c.name, examples: c.examples }));
    try {
      const jobs = [pool.train('a', caps, null, false), pool.train('a', caps, null, false), pool.train('b', caps, null, false)];
      let sawBoth = false;
      let settled = false;
      void Promise.allSettled(jobs).then(() => (settled = true));
      let most = 0;
      await waitUntil(
        'three trainings to finish',
        () => {
          most = Math.max(most, pool.runningFor('a'));
          if (pool.runningFor('a') === 1 && pool.runningFor('b') === 1) sawBoth = true;
          return settled;
        },
        60_000,
      );
      expect(most).toBe(1);
      expect(sawBoth).toBe(true);
      for (const r of await Promise.all(jobs)) expect(r.score('loan flight request number 12 variant 3').scores[0].name).toBe('cap_12');
    } finally {
      await pool.close();
    }
  });

  it('runs background trainings beside the tenant’s own and after everyone waiting: a PUT never waits for one', async () => {
    const { TrainingPool } = await import('../../server/src/service/agents/training.js');
    const pool = new TrainingPool({ timeoutMs: 60_000, memoryMb: 512, workers: 2 });
    const large = bigAgent().capabilities.map((c) => ({ name: c.name, examples: c.examples }));
    const small = large.slice(0, 4).map((c) => ({ name: c.name, examples: c.examples.slice(0, 6) }));
    const finished: string[] = [];
    const job = (name: string, tenant: string, caps: typeof large, background: boolean) =>
      pool.train(tenant, caps, null, false, { background }).then(() => finished.push(name));
    try {
      // Two background trainings of one tenant: one at a time (the second waits its turn), and
      // the tenant's own small training, sent after both, is not queued behind them.
      const jobs = [job('background-1', 'acme', large, true), job('background-2', 'acme', large, true)];
      await waitUntil('a background training to start', () => pool.workers > 0);
      jobs.push(job('put', 'acme', small, false));
      await Promise.all(jobs);
      expect(finished).toEqual(['put', 'background-1', 'background-2']);
      expect(pool.runningFor('acme')).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('keeps a worker for small definitions: one tenant’s small agent never waits behind two large ones', async () => {
    const { TrainingPool } = await import('../../server/src/service/agents/training.js');
    const pool = new TrainingPool({ timeoutMs: 60_000, memoryMb: 512, workers: 2 });
    const large = bigAgent().capabilities.map((c) => ({ name: c.name, examples: c.examples }));
    const small = large.slice(0, 4).map((c) => ({ name: c.name, examples: c.examples.slice(0, 6) }));
    const finished: string[] = [];
    const job = (tenant: string, caps: typeof large) => pool.train(tenant, caps, null, false).then(() => finished.push(tenant));
    try {
      // The large ones are not awaited: closing the pool ends them, so the test's time is the small one's.
      for (const tenant of ['big-a', 'big-b']) void job(tenant, large).catch(() => undefined);
      await waitUntil('a large training to start', () => pool.runningFor('big-a') + pool.runningFor('big-b') > 0);
      await job('small-c', small);
      expect(finished[0]).toBe('small-c');
      expect(pool.runningFor('big-a') + pool.runningFor('big-b')).toBeGreaterThan(0);
    } finally {
      await pool.close();
    }
  });
});
