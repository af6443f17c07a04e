// The response check every test goes through (helpers/openapi-responses.ts) refuses what the
// document does not say, so that a test cannot pass on a response the document breaks.
import { describe, expect, it } from 'vitest';
import { checkResponse } from './helpers/openapi-responses.js';

const converse = 'http://127.0.0.1:3000/api/v1/agents/shop/converse';
const audit = '/api/v1/agents/shop/conversations/6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10/audit-logs';
const json = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r-1' };
const reply = {
  conversation_id: '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10',
  response: { message: 'What is your order number?', phase: 'ask', awaiting_input: true, options: [] },
  state: { status: 'active', capability: 'order_status' },
};
const statusChange = (from: unknown) => ({
  conversation_id: '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10',
  data: [
    {
      id: '0b7a8a43-32a5-4d8e-8f5e-2f5a1c0f8e11',
      conversation_id: '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10',
      sequence: 1,
      turn_index: 0,
      type: 'status_change',
      request_id: 'r-1',
      timestamp: '2026-11-24T10:00:00.000Z',
      duration_ms: null,
      data: { from, to: 'active', reason: 'started', outcome: null },
      hash: null,
    },
  ],
  next_cursor: null,
});

describe('the response check against openapi.json', () => {
  it('accepts what the document says and names the operation', () => {
    expect(checkResponse({ method: 'POST', url: converse, status: 200, headers: json, body: reply, hasBody: true })).toBe(
      'POST /api/v1/agents/{slug}/converse',
    );
    expect(checkResponse({ method: 'GET', url: audit, status: 200, headers: json, body: statusChange(null), hasBody: true })).toBe(
      'GET /api/v1/agents/{slug}/conversations/{id}/audit-logs',
    );
    expect(checkResponse({ method: 'GET', url: '/console/agents', status: 200, headers: { 'content-type': 'text/html' }, hasBody: true })).toBeNull();
  });

  it('refuses a response without the headers it declares, or with one that breaks its pattern', () => {
    const problem = { type: 'about:blank', title: 'Too many requests', status: 429, detail: 'Slow down', code: 'rate_limited', request_id: 'r-1' };
    const at = (headers: Record<string, string>) => () =>
      checkResponse({
        method: 'POST',
        url: converse,
        status: 429,
        headers: { 'content-type': 'application/problem+json', ...headers },
        body: problem,
        hasBody: true,
      });
    expect(at({ 'x-request-id': 'r-1', 'retry-after': '2' })).not.toThrow();
    expect(at({ 'x-request-id': 'r-1' })).toThrow(/lacks the header retry-after/);
    expect(at({ 'retry-after': '2' })).toThrow(/lacks the header x-request-id/);
    expect(at({ 'x-request-id': 'r-1', 'retry-after': 'soon' })).toThrow(/header retry-after \(soon\) does not match/);
  });

  it('refuses an undocumented field, enum value, status, content type or missing body field', () => {
    const check =
      (status: number, body: unknown, headers: Record<string, string> = json, url = converse, method = 'POST') =>
      () =>
        checkResponse({ method, url, status, headers, body, hasBody: true });
    expect(check(200, { ...reply, extra: 1 })).toThrow(/unevaluated properties.*extra/);
    expect(check(200, { ...reply, state: { ...reply.state, status: 'lost' } })).toThrow(/allowed values/);
    expect(check(200, { ...reply, conversation_id: undefined })).toThrow(/required property 'conversation_id'/);
    expect(check(418, {})).toThrow(/not a documented status/);
    expect(check(200, reply, { 'content-type': 'text/plain', 'x-request-id': 'r-1' })).toThrow(/answered text\/plain/);
    expect(check(200, statusChange('lost'), json, audit, 'GET')).toThrow(/breaks the document/);
    // An audit entry is reported against its own type's schema, not the union's first branch.
    const entry = { ...statusChange(null).data[0], type: 'slot_filled', data: { slot: 'order_id', phase: 'ask', capability: 'orders' } };
    const message = (() => {
      try {
        check(200, { ...statusChange(null), data: [entry] }, json, audit, 'GET')();
        return '';
      } catch (err) {
        return (err as Error).message.split('\nbody:')[0];
      }
    })();
    expect(message).toMatch(/\/data\/0\/data must have required property 'source'/);
    expect(message).not.toMatch(/strategy/);
    const problem = { type: 'about:blank', title: 'Not found', status: 404, detail: 'No agent shop', code: 'agent_not_found', request_id: 'r-1' };
    const problemJson = { 'content-type': 'application/problem+json', 'x-request-id': 'r-1' };
    expect(check(404, problem, problemJson, audit, 'GET')).not.toThrow();
    expect(check(404, { ...problem, stack: 'at x' }, problemJson, audit, 'GET')).toThrow(/unevaluated properties/);
    expect(check(404, problem, json, audit, 'GET')).toThrow(/answered application\/json/);
  });
});
