// Replies do not depend on how long backends and models take: the render budget counts time
// spent rendering, never time spent waiting, so a slow payment API or model server gives the
// same words and the same branches as a fast one (docs/security.md, "Budgets").
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentDefinitionInput } from '@switchboard/contract';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { appFixture } from '../helpers/fixture.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';

warnIfPostgresSkipped();

function payAgent(base: string): AgentDefinitionInput {
  return {
    name: 'Pay',
    actions: {
      pay: { type: 'http', method: 'POST', url: `${base}/pay`, body: { user: '{{ user.id }}' }, timeout_ms: 10_000 },
    },
    capabilities: [
      {
        name: 'pay',
        examples: ['pay my bill', 'i want to pay', 'make a payment', 'pay now', 'settle my invoice'],
        phases: [
          { id: 'call', call: 'pay', on_error: 'failed' },
          { id: 'check', next: [{ if: 'actions.pay.ok and actions.pay.body.amount > 40', goto: 'paid' }, { goto: 'failed' }] },
          { id: 'paid', say: 'Paid {{ actions.pay.body.amount }} for {{ user.id | upcase }}.', end: 'completed' },
          { id: 'failed', say: 'Payment failed.', end: 'escalated' },
        ],
      },
      {
        name: 'billing',
        examples: ['question about my invoice', 'i was charged twice', 'my bill is wrong', 'invoice question', 'how do refunds work'],
        phases: [
          {
            id: 'assist',
            generate: { instructions: 'You help with bills for {{ user.id }}.', fills: { invoice_id: { type: 'text' } }, max_steps: 2 },
            on_error: 'sorry',
            next: 'wrap_up',
          },
          { id: 'wrap_up', say: 'Glad I could help with {{ slots.invoice_id | default: "your bill" }}.', end: 'completed' },
          { id: 'sorry', say: 'Sorry.', end: 'escalated' },
        ],
      },
    ],
  };
}

eachDatabase('slow backends and models on $name', (database) => {
  let backend: Backend;
  let llm: FakeLlm;
  let delayMs = 0;
  beforeAll(async () => {
    llm = await startFakeLlm();
    backend = await startBackend((_req, res) => {
      setTimeout(() => json(res, 200, { ok: true, amount: 42 }), delayMs);
    });
  });
  afterAll(async () => {
    await backend?.close();
    await llm?.close();
  });
  const f = appFixture(database, {
    config: () => ({
      llm: { url: llm.url, model: 'fake-model', timeoutMs: 10_000, maxRetries: 0, maxTokensPerConversation: 0, tenantDailyTokens: 0 },
      actionAllowedHosts: { acme: [`127.0.0.1:${backend.port}`] },
    }),
    agents: () => ({ pay: payAgent(backend.url) }),
  });
  const say = (message: string) =>
    request(f.app.app).post('/api/v1/agents/pay/converse').set({ 'tenant-id': 'acme', 'user-id': 'u-7' }).send({ message }).expect(200);
  const errorsOf = async (id: string) =>
    (await request(f.app.app).get(`/api/v1/agents/pay/conversations/${id}/audit-logs?type=error`).set('tenant-id', 'acme').expect(200)).body.data;

  it('answers the same words and takes the same branch whether the payment API takes 0 ms, 300 ms, 1.5 s or 5 s', async () => {
    const seen = [];
    for (const ms of [0, 300, 1500, 5000]) {
      delayMs = ms;
      const res = await say('i want to pay');
      expect(await errorsOf(res.body.conversation_id)).toEqual([]);
      seen.push([res.body.response.message, res.body.state.status]);
    }
    expect(seen).toEqual(Array(4).fill(['Paid 42 for U-7.', 'completed']));
  }, 30_000);

  it('renders the template after a model call that took 2 s as after one that took none', async () => {
    const replies = [];
    for (const delay of [0, 2000]) {
      llm.reset();
      llm.script({
        delayMs: delay,
        toolCalls: [
          { name: 'fill', arguments: { slot: 'invoice_id', value: 'INV-7' } },
          { name: 'finish', arguments: { outcome: 'resolved' } },
        ],
      });
      const res = await say('question about my invoice');
      expect(await errorsOf(res.body.conversation_id)).toEqual([]);
      replies.push([res.body.response.message, res.body.state.status]);
    }
    expect(replies).toEqual(Array(2).fill(['Glad I could help with INV-7.', 'completed']));
  }, 30_000);
});
