// The response check (test/setup/openapi-check.ts) can fail: a response that breaks openapi.json
// fails the supertest request and the fetch that received it, and one that keeps to it passes.
import { createServer } from 'node:http';
import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const app = express();
let answer: unknown = { data: [] };
app.get('/api/v1/agents', (_req, res) => {
  res.setHeader('x-request-id', 'r-1');
  res.json(answer);
});

describe('the response check', () => {
  const server = createServer(app);
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('passes a response that keeps to the document', async () => {
    answer = { data: [] };
    expect((await request(app).get('/api/v1/agents')).status).toBe(200);
    expect((await fetch(`${base}/api/v1/agents`)).status).toBe(200);
  });

  it('fails a supertest request, and a fetch, whose response breaks it', async () => {
    answer = { data: [{ id: 42 }] };
    await expect(
      request(app)
        .get('/api/v1/agents')
        .then((r) => r.status),
    ).rejects.toThrow(/openapi\.json/);
    await expect(fetch(`${base}/api/v1/agents`)).rejects.toThrow(/openapi\.json/);
  });
});
