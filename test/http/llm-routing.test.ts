// The optional OpenAI-compatible provider for messages the embedded router cannot place,
// against a local fake speaking the Chat Completions protocol.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { json, startBackend, type Backend } from '../helpers/servers.js';

const agent = {
  name: 'Bank',
  capabilities: [
    {
      name: 'balance',
      description: 'Account balance',
      examples: ['what is my balance', 'how much money do I have', 'show my balance'],
      phases: [{ id: 'b', say: 'Your balance is fine.' }],
    },
    {
      name: 'card_lost',
      description: 'Report a lost or stolen card',
      examples: ['I lost my card', 'my card was stolen', 'block my card'],
      phases: [{ id: 'c', say: 'Card blocked.', end: 'completed' }],
    },
  ],
};

describe('LLM routing provider', () => {
  let provider: Backend;
  let answer: (body: any) => { status: number; content?: string; delayMs?: number };
  let app: App;

  beforeAll(async () => {
    provider = await startBackend((_req, res, body) => {
      const a = answer(JSON.parse(body));
      setTimeout(() => {
        if (a.status !== 200) return json(res, a.status, { error: { message: 'boom' } });
        json(res, 200, {
          id: 'x',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: a.content }, finish_reason: 'stop' }],
        });
      }, a.delayMs ?? 0);
    });
  });
  afterAll(async () => provider.close());
  const f = appFixture(databases[0], {
    config: () => ({
      llm: {
        url: `${provider.url}/v1`,
        model: 'fake-model',
        apiKey: 'llm-key',
        timeoutMs: 20_000,
        maxRetries: 0,
        maxTokensPerConversation: 0,
        tenantDailyTokens: 0,
      },
      routerLlmTimeoutMs: 300,
    }),
    agents: { bank: agent },
    tenant: 't',
  });
  beforeAll(() => {
    app = f.app;
  });

  const converse = async (message: string) => {
    const r = await request(app.app).post('/api/v1/agents/bank/converse').set('tenant-id', 't').send({ message }).expect(200);
    const audit = await request(app.app).get(`/api/v1/agents/bank/conversations/${r.body.conversation_id}/audit-logs`).set('tenant-id', 't');
    return { body: r.body, audit: audit.body.data as any[] };
  };

  it('asks the provider about a message the embedded router cannot place, and follows its answer', async () => {
    answer = () => ({ status: 200, content: '```json\n{"capability": "card_lost"}\n```' });
    const before = provider.requests.length;
    const { body, audit } = await converse('someone took my wallet with everything in it');
    expect(body.state.capability).toBe('card_lost');
    const sent = JSON.parse(provider.requests[before].body);
    expect(provider.requests[before].url).toBe('/v1/chat/completions');
    expect(provider.requests[before].headers.authorization).toBe('Bearer llm-key');
    expect(sent.model).toBe('fake-model');
    expect(sent.messages[0].content).toContain('card_lost: Report a lost or stolen card');
    expect(sent.messages[1]).toEqual({ role: 'user', content: 'someone took my wallet with everything in it' });
    const decision = audit.find((e) => e.type === 'routing_decision');
    expect(decision.data).toMatchObject({
      strategy: 'llm',
      reason: 'llm',
      selected: { capability: 'card_lost' },
      llm: { model: 'fake-model', answer: 'card_lost' },
    });
    // The routing call is metered like any model call: its tokens count in the tenant's day, and it asks for a few.
    expect(sent.max_tokens).toBe(64);
    const usage = await f.db.knex('llm_usage').where({ tenant_id: 't' }).first();
    expect(Number(usage.calls)).toBeGreaterThan(0);
    expect(Number(usage.tokens)).toBeGreaterThan(0);
  });

  it('does not ask about a message the embedded router places itself', async () => {
    answer = () => ({ status: 200, content: '{"capability": "card_lost"}' });
    const before = provider.requests.length;
    const { body } = await converse('what is my balance');
    expect(body.state.capability).toBe('balance');
    expect(provider.requests.length).toBe(before);
  });

  it('keeps the fallback when the provider says none fits', async () => {
    answer = () => ({ status: 200, content: '{"capability": null}' });
    const { body, audit } = await converse('qqq zzz xxx');
    expect(body.state.capability).toBe('fallback');
    expect(audit.find((e) => e.type === 'routing_decision').data).toMatchObject({ strategy: 'fallback', llm: { answer: null } });
    expect(audit.some((e) => e.type === 'error')).toBe(false);
  });

  it.each([
    ['an HTTP error', () => ({ status: 500 }), /HTTP 500/],
    ['a timeout', () => ({ status: 200, content: '{"capability":"balance"}', delayMs: 600 }), /no answer within 300 ms/],
    ['an unknown capability', () => ({ status: 200, content: '{"capability":"transfer_money"}' }), /unknown capability/],
    ['prose instead of JSON', () => ({ status: 200, content: 'I think it is about cards.' }), /not \{"capability"/],
  ])('falls back to the embedded router on %s, with an error entry', async (_name, a, message) => {
    answer = a;
    const { body, audit } = await converse('qzx wvk plorb');
    expect(body.state.capability).toBe('fallback');
    const error = audit.find((e) => e.type === 'error');
    expect(error.data).toMatchObject({ code: 'llm_failed', model: 'fake-model' });
    expect(error.data.message).toMatch(message);
    // Time spent waiting for the provider counts as routing, not as the engine's.
    const timing = audit.find((e) => e.type === 'turn_timing').data;
    if (_name === 'a timeout') expect(timing.routing_ms).toBeGreaterThanOrEqual(290);
    expect(timing.engine_ms).toBeLessThan(timing.total_ms);
  });
});
