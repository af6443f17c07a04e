// A release policy that cannot fall away: a rollback to a version from before the policy, a
// version that drops or loosens it, and an ungated PUT racing a release that makes a policy's
// version current are each refused unless forced with a reason, and recorded as forced. On both
// databases.
import request from 'supertest';
import { expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

warnIfPostgresSkipped();

const SLUG = 'desk';
const T = { 'tenant-id': 'acme' };

const desk = (name: string, release?: AgentDefinitionInput['release']): AgentDefinitionInput => ({
  name,
  capabilities: [
    { name: 'hello', examples: ['hello', 'hi there', 'good morning'], phases: [{ id: 'hi', say: `Hello from ${name}.` }] },
    { name: 'bye', examples: ['bye', 'goodbye', 'see you'], phases: [{ id: 'bye', say: 'Bye.', end: 'completed' }] },
  ],
  ...(release ? { release } : {}),
});

const STRICT = { require: { tests: 'pass' as const, routing_accuracy: { min: 0.2, no_regression: false } } };

eachDatabase('a release policy that cannot fall away ($name)', (database) => {
  const f = appFixture(database);
  const api = () => request(f.app.app);
  const put = (def: AgentDefinitionInput, activate = true) => api().put(`/api/v1/agents/${SLUG}?activate=${activate}`).set(T).send(def);
  const current = async () => (await api().get(`/api/v1/agents/${SLUG}`).set(T).expect(200)).body.version as number;
  const record = async () => (await api().get(`/api/v1/agents/${SLUG}/releases?limit=100`).set(T).expect(200)).body.data as Record<string, unknown>[];

  it('refuses a rollback to a version from before the policy unless forced, and records it forced', async () => {
    expect((await put(desk('one'))).status).toBe(200);
    expect((await put(desk('two', STRICT))).status).toBe(200);
    expect(await current()).toBe(2);
    const refused = await api().post(`/api/v1/agents/${SLUG}/versions/1/activate`).set(T);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('release_gates_failed');
    expect(refused.body.gates).toEqual([
      expect.objectContaining({ gate: 'policy', passed: false, detail: expect.stringMatching(/version 1 weakens .*no release policy/) }),
    ]);
    expect(await current()).toBe(2);
    const forced = await api().post(`/api/v1/agents/${SLUG}/versions/1/activate?force=true&reason=v2%20escalates%20everything`).set(T);
    expect(forced.status).toBe(200);
    expect((await record())[0]).toMatchObject({
      action: 'rollback',
      version: 1,
      forced: true,
      reason: 'v2 escalates everything',
      gates: [{ gate: 'policy', passed: false }],
    });
    // Back to the policy: a rollforward to v2 is gated by nothing (v1 has no policy) and strengthens it.
    expect((await api().post(`/api/v1/agents/${SLUG}/versions/2/activate`).set(T)).status).toBe(200);
  });

  it('refuses a version that drops or loosens the policy in force, through PUT and activate alike', async () => {
    const before = (await record()).length;
    const dropped = await put(desk('three'));
    expect(dropped.status).toBe(409);
    expect(dropped.body.detail).toMatch(/stored as draft version 3/);
    expect(dropped.body.gates.find((g: { gate: string }) => g.gate === 'policy')).toMatchObject({ passed: false });
    const looser = await put(desk('four', { require: { tests: 'pass', routing_accuracy: { min: 0.1, no_regression: false } } }));
    expect(looser.status).toBe(409);
    expect(looser.body.gates.find((g: { gate: string }) => g.gate === 'policy').detail).toMatch(/routing_accuracy\.min goes from 0\.2 to 0\.1/);
    expect(await current()).toBe(2);
    expect(await record()).toHaveLength(before);
    // The same policy, or a stronger one, goes through.
    const stronger = await put(desk('five', { require: { ...STRICT.require, routing_accuracy: { min: 0.25, no_regression: true } } }));
    expect(stronger.status, JSON.stringify(stronger.body.gates)).toBe(200);
    expect(stronger.body.release).toMatchObject({ forced: false });
    expect(stronger.body.release.gates.some((g: { gate: string }) => g.gate === 'policy')).toBe(false);
  });

  it('sends an ungated PUT through the gates when a release made a policy’s version current meanwhile', async () => {
    // A fresh agent without a policy, and a drafted version with one.
    const slug = 'racer';
    expect((await api().put(`/api/v1/agents/${slug}`).set(T).send(desk('one'))).status).toBe(200);
    expect((await api().put(`/api/v1/agents/${slug}?activate=false`).set(T).send(desk('two', STRICT))).status).toBe(200);
    // The PUT reads "no policy in force", then, before it stores, another request releases v2.
    const agents = f.app.agents;
    const original = agents.put.bind(agents);
    let raced = false;
    agents.put = async (...args: Parameters<typeof original>) => {
      if (!raced && args[1] === slug && args[3]?.expectCurrent !== undefined) {
        raced = true;
        await f.app.releases.activate('acme', slug, 2, { force: false }, { by: null, requestId: 'race' });
      }
      return original(...args);
    };
    try {
      const r = await api().put(`/api/v1/agents/${slug}`).set(T).send(desk('three'));
      expect(raced).toBe(true);
      expect(r.status).toBe(409);
      expect(r.body.gates.find((g: { gate: string }) => g.gate === 'policy')).toMatchObject({ passed: false });
    } finally {
      agents.put = original;
    }
    expect((await api().get(`/api/v1/agents/${slug}`).set(T).expect(200)).body.version).toBe(2);
  });
});
