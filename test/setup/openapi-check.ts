// Checks every response a test receives from the server against openapi.json
// (helpers/openapi-responses.ts): supertest's requests and every fetch, which the typed client
// uses. A violation fails the request, and so the test that made it. The responses checked per
// operation are written for the run's summary (helpers/openapi-coverage.ts).
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { Test } from 'supertest';
import { afterAll } from 'vitest';
import { checkResponse, operationOf } from '../helpers/openapi-responses.js';

const counts = new Map<string, number>();
const count = (op: string | null) => {
  if (op) counts.set(op, (counts.get(op) ?? 0) + 1);
};
const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');
const mediaType = (v: unknown) =>
  String(v ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();

type Assert = (this: Test, resError: unknown, res: unknown, fn?: (err: unknown, res: unknown) => void) => void;
const proto = Test.prototype as unknown as { assert: Assert; method: string; url: string };
const assert = proto.assert;
proto.assert = function (this: Test & { method: string; url: string }, resError, res, fn) {
  const r = res as { status: number; headers: Record<string, string>; body: unknown; text?: string } | undefined;
  if (r && typeof r.status === 'number') {
    try {
      const type = mediaType(r.headers['content-type']);
      count(
        checkResponse({
          method: this.method,
          url: this.url,
          status: r.status,
          headers: r.headers,
          body: r.body,
          hasBody: (typeof r.text === 'string' && r.text.length > 0) || (r.status !== 204 && type !== ''),
        }),
      );
    } catch (err) {
      fn?.call(this, err, res);
      return;
    }
  }
  assert.call(this, resError, res, fn);
};

const realFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const res = await realFetch(input, init);
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  if (!operationOf(method, url)) return res;
  const type = mediaType(res.headers.get('content-type'));
  let body: unknown;
  let hasBody = res.status !== 204 && res.status !== 304 && type !== '';
  if (isJson(type) && method.toUpperCase() !== 'HEAD') {
    const text = await res.clone().text();
    hasBody = text.length > 0;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      throw new Error(`openapi.json: ${method} ${url} → ${res.status} answered ${type} that is not JSON: ${text.slice(0, 200)}`);
    }
  }
  count(checkResponse({ method, url, status: res.status, headers: Object.fromEntries(res.headers.entries()), body, hasBody }));
  return res;
};

afterAll(() => {
  const dir = process.env.OPENAPI_COUNTS_DIR;
  if (dir && counts.size) appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify(Object.fromEntries(counts))}\n`);
  counts.clear();
});
