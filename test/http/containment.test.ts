// What a hostile tenant can do through the surfaces added since the tenant model (tests,
// replays, tools, knowledge, model calls, metrics): each finding reproduced, and refused or
// contained (docs/security.md, "Budgets").
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { databases } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

const T = { 'tenant-id': 'acme' };

/** An agent whose one action is offered to a model with `parameters` as its JSON Schema. */
function toolAgent(parameters: Record<string, unknown>) {
  return {
    name: 'Tools',
    capabilities: [
      {
        name: 'help',
        examples: ['help me', 'i need help', 'can you help', 'support please', 'assist me'],
        phases: [{ id: 'g', generate: { instructions: 'Help.', tools: ['lookup'] } }],
      },
    ],
    actions: { lookup: { type: 'http', method: 'POST', url: 'https://example.com/lookup', parameters } },
  };
}

/** `levels` definitions, each an anyOf naming the next one twice: 2^levels branches for 2–4 KB of JSON. */
function schemaBomb(levels: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = { [`l${levels}`]: { type: 'string', minLength: 3 } };
  for (let i = levels - 1; i >= 0; i--) $defs[`l${i}`] = { anyOf: [{ $ref: `#/$defs/l${i + 1}` }, { $ref: `#/$defs/l${i + 1}`, maxLength: 2 }] };
  return { type: 'object', $defs, properties: { q: { $ref: '#/$defs/l0' } } };
}

describe('tool schemas', () => {
  const f = appFixture(databases[0]);
  const put = (slug: string, parameters: Record<string, unknown>) => request(f.app.app).put(`/api/v1/agents/${slug}`).set(T).send(toolAgent(parameters));

  it('refuses a schema whose references expand exponentially, at PUT, before compiling it', async () => {
    for (const levels of [22, 40]) {
      const bomb = schemaBomb(levels);
      expect(JSON.stringify(bomb).length).toBeLessThan(4000);
      const res = await put(`bomb-${levels}`, bomb);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: 'actions.lookup.parameters', message: expect.stringMatching(/expands to more than 2000 schema nodes/) }]);
    }
    expect((await request(f.app.app).get('/api/v1/agents/bomb-22').set(T)).status).toBe(404);
  });

  it('refuses a recursive schema and a reference to nothing, and accepts shared definitions', async () => {
    const recursive = { type: 'object', properties: { node: { $ref: '#/$defs/n' } }, $defs: { n: { type: 'object', properties: { child: { $ref: '#/$defs/n' } } } } };
    expect((await put('rec', recursive)).body.errors[0].message).toMatch(/refers to itself/);
    expect((await put('dangling', { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })).body.errors[0].message).toMatch(/refers to nothing/);
    const shared = { type: 'object', $defs: { id: { type: 'string', pattern: '^[A-Z]+-[0-9]+$' } }, properties: { from: { $ref: '#/$defs/id' }, to: { $ref: '#/$defs/id' } } };
    expect((await put('shared', shared)).status).toBe(200);
  });
});
