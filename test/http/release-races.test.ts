// Releases at their edges, on both databases: of two activations at once one is taken and the
// other refused until the first is done, never a fork of the record; an older draft never released goes through the gates; an
// evaluation is reused for the same candidate and inputs only while the policy's max_age_hours
// allows, and a stale one is run again; an evaluation that fails refuses the step (409 naming it),
// and is never reused.
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { createApp, type App } from '../../server/src/app.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { FakeClock } from '../helpers/clock.js';
import { testConfig } from '../helpers/servers.js';

warnIfPostgresSkipped();

const SLUG = 'desk';
const T = { 'tenant-id': 'acme' };

const desk = (name: string): AgentDefinitionInput => ({
  name,
  capabilities: [
    { name: 'hello', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: `Hello from ${name}.` }] },
    { name: 'bye', examples: ['bye', 'goodbye', 'see you', 'farewell'], phases: [{ id: 'bye', say: 'Bye.', end: 'completed' }] },
  ],
  release: { require: { routing_accuracy: { min: 0.2, no_regression: false } }, max_age_hours: 1 },
});

eachDatabase('releases at their edges ($name)', (database) => {
  const clock = new FakeClock();
  let app: App;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await database.create();
    drop = created.drop;
    app = createApp(testConfig(), { db: created.db, logger: pino({ level: 'silent' }), clock });
    await request(app.app).put(`/api/v1/agents/${SLUG}`).set(T).send(desk('v1')).expect(200);
  });
  afterAll(async () => {
    await app?.close();
    await drop?.();
  });
  const api = () => request(app.app);
  const draft = async (name: string) =>
    (await api().put(`/api/v1/agents/${SLUG}?activate=false`).set(T).send(desk(name)).expect(200)).body.stored_version as number;
  const steps = async () =>
    (await api().get(`/api/v1/agents/${SLUG}/releases?limit=100`).set(T).expect(200)).body.data as {
      sequence: number;
      action: string;
      version: number;
      previous_version: number | null;
      evaluation_id: string | null;
    }[];

  it('takes one of two activations made at once and refuses the other with 429, which then goes as a second step', async () => {
    const [a, b] = [await draft('v2'), await draft('v3')];
    const before = (await steps()).length;
    const answers = await Promise.all([a, b].map((v) => api().post(`/api/v1/agents/${SLUG}/versions/${v}/activate`).set(T)));
    // One evaluation a tenant at a time: the second waits its turn, and changes nothing meanwhile.
    expect(answers.map((r) => r.status).sort()).toEqual([200, 429]);
    const refused = answers.find((r) => r.status === 429)!;
    expect(refused.body.code).toBe('rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await steps()).length).toBe(before + 1);
    const later = answers[0].status === 429 ? a : b;
    await api().post(`/api/v1/agents/${SLUG}/versions/${later}/activate`).set(T).expect(200);
    const record = await steps();
    expect(record.length).toBe(before + 2);
    const [newest, previous] = record;
    // One chain: the later step starts from the version the earlier one made current.
    expect(newest).toMatchObject({ sequence: previous.sequence + 1, version: later, previous_version: previous.version });
    expect((await api().get(`/api/v1/agents/${SLUG}`).set(T).expect(200)).body.version).toBe(later);
    expect((await api().get(`/api/v1/agents/${SLUG}/releases/verify`).set(T).expect(200)).body).toMatchObject({ valid: true });
  });

  it('sends an older draft that was never released through the gates: an activation, not a rollback', async () => {
    const older = await draft('v4');
    await draft('v5');
    const r = await api().post(`/api/v1/agents/${SLUG}/versions/${older}/activate`).set(T).expect(200);
    expect(r.body.release).toMatchObject({ action: 'activate', version: older, evaluation_id: expect.any(String) });
    expect(r.body.release.gates.map((g: { gate: string }) => g.gate)).toEqual(['routing_accuracy']);
  });

  it('reuses an evaluation within max_age_hours and runs a stale one again', async () => {
    const candidate = await draft('v6');
    const split = async (percent: number) =>
      (await api().put(`/api/v1/agents/${SLUG}/split`).set(T).send({ version: candidate, percent }).expect(200)).body.release.evaluation_id as string;
    const first = await split(10);
    clock.advance(30 * 60_000);
    expect(await split(20)).toBe(first);
    clock.advance(31 * 60_000);
    const again = await split(30);
    expect(again).not.toBe(first);
    expect(again).toEqual(expect.any(String));
  });

  it('refuses a step whose evaluation fails (409 naming it, nothing recorded), and runs a new one on the next try', async () => {
    const candidate = await draft('v7');
    const before = await steps();
    const current = (await api().get(`/api/v1/agents/${SLUG}`).set(T).expect(200)).body.version as number;
    // The evaluation's cross-validation trains its folds' routers: the first such training fails.
    vi.spyOn(app.agents.routers, 'unstored').mockReturnValueOnce(() => Promise.reject(new Error('the training worker died')));
    const refused = await api().post(`/api/v1/agents/${SLUG}/versions/${candidate}/activate`).set(T).expect(409);
    expect(refused.body).toMatchObject({ code: 'release_gates_failed', evaluation_id: expect.any(String) });
    expect(refused.body.detail).toMatch(/failed: the training worker died/);
    const failed = (await api().get(`/api/v1/agents/${SLUG}/evaluations/${refused.body.evaluation_id}`).set(T).expect(200)).body;
    expect(failed).toMatchObject({ status: 'failed', error: 'the training worker died' });
    expect(await steps()).toEqual(before);
    expect((await api().get(`/api/v1/agents/${SLUG}`).set(T).expect(200)).body.version).toBe(current);
    // The same candidate and inputs within max_age_hours: the failed evaluation is not reused.
    const taken = await api().post(`/api/v1/agents/${SLUG}/versions/${candidate}/activate`).set(T).expect(200);
    expect(taken.body.release.evaluation_id).toEqual(expect.any(String));
    expect(taken.body.release.evaluation_id).not.toBe(refused.body.evaluation_id);
  });
});
