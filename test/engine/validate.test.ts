import { describe, expect, it } from 'vitest';
import { AgentDefinition } from '@switchboard/contract';
import { validateDefinition } from '../../server/src/engine/compile.js';

describe('definition validation', () => {
  it('reports every broken reference with its path', () => {
    const def = AgentDefinition.parse({
      name: 'x',
      routing: { fallback: 'nope' },
      capabilities: [
        {
          name: 'a',
          examples: ['x'],
          phases: [
            { id: 'p1', next: 'shiped' },
            { id: 'p1', call: 'missing' },
          ],
        },
        {
          name: 'a',
          phases: [
            { id: 'q', next: [{ if: '(', goto: 'q' }, { goto: 'zz' }] },
            { id: 'r', say: 'token {{ secrets.T }}', end: 'completed', next: 'q' },
            { id: 's', collect: { slot: 'v', type: 'choice' } },
            { id: 't', collect: { slot: 'w', type: 'text', pattern: '([' } },
            { id: 'u', collect: { slot: 'x', type: 'text', pattern: '^(a+)+$' } },
            { id: 'v', collect: { slot: 'y', type: 'text', min: 1 } },
            { id: 'w', collect: { slot: 'z', type: 'integer', min: 5, max: 2 } },
          ],
        },
      ],
      actions: { act: { type: 'http', method: 'GET', url: 'ftp://x', body: { a: 1 }, save: { s: 'nope.x' } } },
    });
    const paths = validateDefinition(def).map((p) => `${p.path}: ${p.message}`);
    expect(paths).toEqual(
      expect.arrayContaining([
        'capabilities[0].phases[0].next: unknown phase "shiped"',
        'capabilities[1].phases[5].collect.min: min applies only to type number or integer',
        'capabilities[1].phases[6].collect.min: min must not be greater than max',
        'capabilities[0].phases[1].id: duplicate phase id "p1" in capability "a"',
        'capabilities[0].phases[1].call: unknown action "missing"',
        'capabilities[1].name: duplicate capability name "a"',
        'capabilities[1].phases[0].next[1].goto: unknown phase "zz"',
        'capabilities[1].phases[1].say: secrets can be read only in action url, headers and body',
        'capabilities[1].phases[1].next: a phase with end cannot have next',
        'capabilities[1].phases[2].collect.choices: type choice needs choices or options on the phase',
        'routing.fallback: unknown capability "nope"',
        'actions.act.url: must be an http:// or https:// URL',
        'actions.act.body: a GET request has no body',
        'actions.act.save.s: must be a path such as body.eta or body.items.0.id',
      ]),
    );
    expect(paths.some((p) => p.startsWith('capabilities[1].phases[0].next[0].if: invalid condition'))).toBe(true);
    expect(paths.some((p) => p.startsWith('capabilities[1].phases[3].collect.pattern: invalid regular expression'))).toBe(true);
  });

  it('accepts a sound definition', () => {
    const def = AgentDefinition.parse({ name: 'x', capabilities: [{ name: 'a', examples: ['x'], phases: [{ id: 'p', say: 'hi {{ user.name }}' }] }] });
    expect(validateDefinition(def)).toEqual([]);
  });
});
