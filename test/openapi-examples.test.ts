// The examples of openapi.json (each resource's, contract/src/resources/): every operation has them, each one is
// valid against its schema (the contract's Zod schema, and the document's as the response check
// reads it, objects closed), and Prism's mock server answers the README's conversation with them.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { AppRoute } from '@ts-rest/core';
import type { ZodTypeAny } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contract, EXAMPLES, type ExampleName } from '@switchboard/contract';
import { checkRequestBody, checkResponse, OPERATIONS } from './helpers/openapi-responses.js';

type Json = Record<string, any>;
const doc = JSON.parse(readFileSync(new URL('../openapi.json', import.meta.url), 'utf8')) as Json;
const routes = { ...contract.api, ...contract.ops, ...contract.widget, ...contract.auth } as Record<string, AppRoute>;
const named = (ref: string) => ref.split('/').pop() as ExampleName;
const resolve = (r: Json): Json => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r);
const refs = (media: Json | undefined) => Object.values((media?.examples ?? {}) as Record<string, { $ref: string }>).map((e) => named(e.$ref));
/** A concrete URL for an operation's path template. */
const urlOf = (path: string) => path.replace(/\{[^}]+\}/g, '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10');

describe('the examples of openapi.json', () => {
  it('show every operation a request body example (where it has one) and a success example, each valid against its schema', () => {
    let checked = 0;
    for (const op of OPERATIONS) {
      const operation = doc.paths[op.key.split(' ')[1]][op.method.toLowerCase()] as Json;
      const route = routes[op.id];
      const json = operation.requestBody?.content?.['application/json'];
      if (json) {
        expect(refs(json).length, `${op.key}: request example`).toBeGreaterThan(0);
        for (const name of refs(json)) {
          expect(checkRequestBody(op, 'application/json', EXAMPLES[name].value), `${op.key} request ${name}`).toEqual([]);
          expect((route as { body: ZodTypeAny }).body.safeParse(EXAMPLES[name].value).error?.issues, `${op.key} request ${name} (Zod)`).toBeUndefined();
          checked++;
        }
      }
      const success = Object.entries(operation.responses as Json).find(([k]) => k.startsWith('2'));
      // A sign-in step answers with a redirect alone.
      if (!success) {
        expect(Object.keys(operation.responses as Json), op.key).toContain('302');
        continue;
      }
      const [status, response] = success;
      const content = Object.entries((resolve(response).content ?? {}) as Json);
      if (!content.length) continue;
      const [media, first] = content[0];
      expect(refs(first).length, `${op.key}: success example`).toBeGreaterThan(0);
      for (const name of refs(first)) {
        const value = EXAMPLES[name].value;
        const json = media === 'application/json';
        checkResponse({
          method: op.method,
          url: urlOf(op.key.split(' ')[1]),
          status: Number(status),
          headers: { 'content-type': media, 'x-request-id': 'example' },
          body: value,
          hasBody: true,
        });
        const schema = route.responses[Number(status) as keyof typeof route.responses] as ZodTypeAny | undefined;
        if (json && schema && 'safeParse' in schema) expect(schema.safeParse(value).error?.issues, `${op.key} ${status} ${name} (Zod)`).toBeUndefined();
        if (!json) expect(typeof value, `${op.key} ${name}`).toBe('string');
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(OPERATIONS.length);
  });

  it('show the usual problems, each a valid problem document', () => {
    const problems = Object.entries(doc.components.responses as Json).flatMap(([, r]) => refs(r.content?.['application/problem+json']));
    const own = Object.values(doc.paths as Json).flatMap((item) =>
      Object.values(item as Json).flatMap((op: Json) =>
        Object.values(op.responses as Json).flatMap((r: Json) => refs(r.content?.['application/problem+json'])),
      ),
    );
    const names = new Set([...problems, ...own]);
    expect([...names].sort()).toEqual([
      'AgentNotFound',
      'ConversationClosed',
      'GatesFailed',
      'LimitExceeded',
      'ReviewItemClosed',
      'TenantRequired',
      'TrainingBudgetExceeded',
      'Unauthorized',
      'ValidationError',
      'WidgetOriginRefused',
    ]);
    // Each is a valid answer, at its own status, of every operation that shows it.
    let shown = 0;
    for (const op of OPERATIONS) {
      for (const [status, response] of Object.entries(op.responses)) {
        for (const name of refs(resolve(response as Json).content?.['application/problem+json'])) {
          const value = EXAMPLES[name].value as { status: number };
          expect(value.status, `${op.key} ${status} ${name}`).toBe(Number(status));
          checkResponse({
            method: op.method,
            url: urlOf(op.path),
            status: value.status,
            headers: { 'content-type': 'application/problem+json', 'x-request-id': 'example', 'retry-after': '2' },
            body: value,
            hasBody: true,
          });
          shown++;
        }
      }
    }
    expect(shown).toBeGreaterThan(names.size);
  });

  it('keeps every example once, in components/examples, and uses each', () => {
    const inline: string[] = [];
    const walk = (n: unknown, at: string): void => {
      if (!n || typeof n !== 'object') return;
      const examples = (n as { examples?: Record<string, { $ref?: string }> }).examples;
      if (examples && !Array.isArray(examples)) for (const [k, e] of Object.entries(examples)) if (!e.$ref) inline.push(`${at}/examples/${k}`);
      for (const [k, v] of Object.entries(n)) if (k !== 'examples') walk(v, `${at}/${k}`);
    };
    walk(doc.paths, '#/paths');
    walk(doc.components.responses, '#/components/responses');
    expect(inline).toEqual([]);
    for (const name of Object.keys(doc.components.examples as Json)) expect(JSON.stringify(doc), name).toContain(`#/components/examples/${name}"`);
    expect(Object.keys(doc.components.examples as Json).sort()).toEqual(Object.keys(EXAMPLES).sort());
  });
});

describe('Prism mock server on openapi.json', () => {
  let prism: ChildProcess;
  let base: string;

  beforeAll(async () => {
    const port = await new Promise<number>((r) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => r(p));
      });
    });
    prism = spawn(
      process.execPath,
      [join(process.cwd(), 'node_modules/@stoplight/prism-cli/dist/index.js'), 'mock', 'openapi.json', '-h', '127.0.0.1', '-p', String(port)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    base = `http://127.0.0.1:${port}`;
    let log = '';
    await new Promise<void>((resolve, reject) => {
      const seen = (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes('Prism is listening')) resolve();
      };
      prism.stdout!.on('data', seen);
      prism.stderr!.on('data', seen);
      prism.once('exit', (code) => reject(new Error(`prism exited (${code}): ${log}`)));
    });
  }, 60_000);
  afterAll(() => {
    prism.kill();
  });

  const call = async (path: string, init: { method?: string; body?: unknown; prefer?: string } = {}) => {
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? 'GET',
      headers: { 'tenant-id': 'demo', 'content-type': 'application/json', ...(init.prefer ? { prefer: init.prefer } : {}) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  };

  it("answers the README's conversation with the examples", async () => {
    const slug = '/api/v1/agents/acme-support';
    const first = await call(`${slug}/converse`, { method: 'POST', body: EXAMPLES.ConverseStart.value });
    expect(first).toEqual({ status: 200, body: EXAMPLES.ConverseAsked.value });
    const id = (first.body as { conversation_id: string }).conversation_id;
    const second = await call(`${slug}/converse`, { method: 'POST', body: { message: '100001', conversation_id: id }, prefer: 'example=ConverseDone' });
    expect(second).toEqual({ status: 200, body: EXAMPLES.ConverseDone.value });
    expect(await call(`${slug}/conversations/${id}/history`)).toEqual({ status: 200, body: EXAMPLES.History.value });
    expect(await call(`${slug}/conversations/${id}/audit-logs`)).toEqual({ status: 200, body: EXAMPLES.AuditPage.value });
    // A request the document refuses gets Prism's own 422, not an example.
    expect((await call(`${slug}/converse`, { method: 'POST', body: { mesage: 'hi' } })).status).toBe(422);
  }, 60_000);
});
