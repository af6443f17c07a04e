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

describe('secrets in templates', () => {
  const f = appFixture(databases[0]);
  const withHeader = (value: string, say = 'Done.') => ({
    name: 'S',
    capabilities: [{ name: 'c', examples: ['go now', 'go please', 'start', 'begin', 'do it'], phases: [{ id: 'a', call: 'x', say, end: 'completed' as const }] }],
    actions: { x: { type: 'http', method: 'GET', url: 'https://example.com/x', headers: { 'x-key': value } } },
  });
  const put = (def: object) => request(f.app.app).put('/api/v1/agents/s').set(T).send(def);

  it('refuses every computed or quoted name at the start of a variable, which could reach secrets or any scope', async () => {
    for (const attack of [
      '{% assign k = "secre" | append: "ts" %}{{ [k].OPS | split: "" | join: "-" }}',
      '{{ ["secrets"].OPS }}',
      "{% assign k = 'secrets' %}{% for v in [k] %}{{ v }}{% endfor %}",
      '{% if [k] %}x{% endif %}',
    ]) {
      const res = await put(withHeader(attack));
      expect(res.status, attack).toBe(400);
      expect(res.body.errors, attack).toEqual([{ path: 'actions.x.headers.x-key', message: expect.stringMatching(/must start with a name/) }]);
    }
  });

  it('refuses secrets transformed, iterated or read outside an action, and allows them whole', async () => {
    for (const attack of ['{{ secrets.OPS | split: "" | join: "-" }}', '{% for s in secrets %}{{ s }}{% endfor %}', '{% assign s = secrets.OPS %}{{ s }}']) {
      expect((await put(withHeader(attack))).body.errors?.[0].message, attack).toMatch(/only whole/);
    }
    expect((await put(withHeader('ok', '{{ secrets.OPS }}'))).body.errors[0]).toEqual({
      path: 'capabilities.c.phases.a.say',
      message: 'secrets can be read only in action url, headers and body',
    });
    expect((await put(withHeader('Bearer {{ secrets.OPS }}', 'We keep no secrets from {{ slots[message] | default: "you" }}.'))).status).toBe(200);
  });
});
