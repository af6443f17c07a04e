import { describe, expect, it } from 'vitest';
import { FILE_VARIABLE_HINT, AgentDefinition } from '@switchboard/contract';
import { validateDefinition } from '../../server/src/engine/compile.js';
import { definitionProblems } from '../../server/src/engine/definition-problems.js';
import { slotWarnings } from '../../server/src/engine/report.js';

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
        'capabilities[1].phases.v.collect.min: min applies only to type number or integer',
        'capabilities[1].phases.w.collect.min: min must not be greater than max',
        'capabilities[0].phases[1].id: duplicate phase id "p1" in capability "a"',
        'capabilities[0].phases[1].call: unknown action "missing"',
        'capabilities[1].name: duplicate capability name "a"',
        'capabilities[1].phases.q.next[1].goto: unknown phase "zz"',
        'capabilities[1].phases.r.say: secrets can be read only in action url, headers and body',
        'capabilities[1].phases.r.next: a phase with end cannot have next',
        'capabilities[1].phases.s.collect.choices: type choice needs choices or options on the phase',
        'routing.fallback: unknown capability "nope"',
        'actions.act.url: must be an http:// or https:// URL',
        'actions.act.body: a GET request has no body',
        'actions.act.save.s: must be a path such as body.eta or body.items.0.id',
      ]),
    );
    expect(paths.some((p) => p.startsWith('capabilities[1].phases.q.next[0].if: invalid condition'))).toBe(true);
    expect(paths.some((p) => p.startsWith('capabilities[1].phases.t.collect.pattern: invalid regular expression'))).toBe(true);
  });

  it("says that a file's ${…} variables are not filled in for a definition sent to the API", () => {
    const def = AgentDefinition.parse({
      name: 'Vars',
      actions: { orders: { type: 'http', method: 'GET', url: '${ORDERS_URL:-http://127.0.0.1:3001}/orders/1' } },
      capabilities: [{ name: 'a', examples: ['hi'], phases: [{ id: 'p', call: 'orders', say: 'ok' }] }],
    });
    const hint =
      'must be an http:// or https:// URL: ${…} is filled in only in agent files (npm run agents -- validate/apply, AGENTS_DIR); a definition sent to the API takes literal values';
    expect(validateDefinition(def).map((p) => `${p.path}: ${p.message}`)).toEqual(expect.arrayContaining([`actions.orders.url: ${hint}`]));
    const hook = AgentDefinition.safeParse({ ...def, webhooks: [{ url: '${HOOK_URL}', events: ['conversation.completed'] }] });
    expect(hook.error?.issues.map((i) => i.message)).toContain(FILE_VARIABLE_HINT);
  });

  it('names capabilities and phases in paths, and says what to write for a JavaScript operator', () => {
    const def = AgentDefinition.parse({
      name: 'x',
      capabilities: [
        {
          name: 'order_status',
          examples: ['where is my order'],
          phases: [
            { id: 'ask', say: '{% if slots.a && slots.b %}both{% endif %}', collect: { slot: 'a' } },
            {
              id: 'lookup',
              say: '{{ slots.a | shout }}',
              next: [{ if: 'slots.a || slots.b', goto: 'ask' }, { if: '!slots.a', goto: 'ask' }, { goto: 'gone' }],
            },
            { id: 'done', say: '{% if slots.a %}open' },
          ],
        },
      ],
    });
    expect(validateDefinition(def).map((p) => `${p.path}: ${p.message}`)).toEqual([
      'capabilities.order_status.phases.ask.say: invalid template: `&&` is not a Liquid operator: use `and` (line 1, column 16)',
      'capabilities.order_status.phases.lookup.say: invalid template: there is no filter "shout" (docs/agents.md lists the filters) (line 1, column 1)',
      'capabilities.order_status.phases.lookup.next[0].if: invalid condition: `||` is not a Liquid operator: use `or` (line 1, column 10)',
      expect.stringMatching(/^capabilities\.order_status\.phases\.lookup\.next\[1\]\.if: invalid condition: Liquid has no `!`: compare instead/),
      'capabilities.order_status.phases.lookup.next[2].goto: unknown phase "gone"',
      'capabilities.order_status.phases.done.say: invalid template: {% if %} is never closed: add {% endif %} (line 1, column 1)',
    ]);
  });

  it('warns of slots read but never collected or saved, wherever they are read', () => {
    const def = AgentDefinition.parse({
      name: 'x',
      messages: { fallback: 'Sorry {{ slots.nme }}' },
      capabilities: [
        {
          name: 'order_status',
          examples: ['where is my order'],
          phases: [
            { id: 'ask', say: 'Number?', collect: { slot: 'order_id' } },
            { id: 'lookup', call: 'get', next: [{ if: "slots['order_state'] == 'late'", goto: 'ask' }] },
            { id: 'done', say: '{{ slots.order_id }} arrives {{ slots.eta }}, {{ slots.oder_id }}' },
          ],
        },
      ],
      actions: { get: { type: 'http', method: 'GET', url: 'https://example.com/{{ slots.order_id }}/{{ slots.region }}', save: { eta: 'body.eta' } } },
    });
    expect(slotWarnings(def).map((w) => `${w.path}: ${w.message}`)).toEqual([
      'capabilities.order_status.phases.lookup.next[0].if: "slots.order_state" is read here, but no phase collects it and no action saves it: it is always empty',
      'capabilities.order_status.phases.done.say: "slots.oder_id" is read here, but no phase collects it and no action saves it: it is always empty',
      'messages.fallback: "slots.nme" is read here, but no phase collects it and no action saves it: it is always empty',
      'actions.get.url: "slots.region" is read here, but no phase collects it and no action saves it: it is always empty',
    ]);
  });

  it('checks answer phases: sources to answer from, where a question they do not answer goes, and what such a phase cannot have', () => {
    const phases = [
      { id: 'a', answer: { not_found: 'nowhere' }, collect: { slot: 'x', type: 'text' } },
      { id: 'b', answer: {}, generate: { instructions: 'hi' } },
      { id: 'c', answer: { not_found: 'a', min_confidence: 0.5, passages: 2 } },
    ];
    const def = AgentDefinition.parse({ name: 'A', capabilities: [{ name: 'docs', examples: ['a question'], phases }] });
    expect(validateDefinition(def).map((p) => `${p.path}: ${p.message}`)).toEqual(
      expect.arrayContaining([
        'capabilities.docs.phases.a.answer: the agent names no knowledge_sources to answer from',
        'capabilities.docs.phases.a.collect: an answer phase cannot also have collect',
        'capabilities.docs.phases.a.answer.not_found: unknown phase "nowhere" (or use "escalate" or "fallback")',
        'capabilities.docs.phases.b.answer: a phase cannot both answer and generate',
      ]),
    );
    const sound = AgentDefinition.parse({
      name: 'A',
      knowledge_sources: ['help', { tag: 'faq' }],
      capabilities: [{ name: 'docs', examples: ['a question'], phases: [phases[2], { id: 'a', say: 'Let me find a person.', end: 'escalated' }] }],
    });
    expect(validateDefinition(sound)).toEqual([]);
    expect(AgentDefinition.safeParse({ ...sound, knowledge_sources: ['Not A Name'] }).success).toBe(false);
    expect(AgentDefinition.safeParse({ ...sound, capabilities: [{ name: 'docs', phases: [{ id: 'x', answer: { passages: 4 } }] }] }).success).toBe(false);
  });

  it('checks generative phases: tools, their schemas, fills, knowledge and what a generate phase cannot have', () => {
    const def = AgentDefinition.parse({
      name: 'x',
      capabilities: [
        {
          name: 'help',
          examples: ['help me'],
          phases: [
            {
              id: 'assist',
              generate: {
                instructions: 'Help with {{ slots.code }} and {{ slots.other }}. The key is {{ secrets.KEY }}.',
                tools: ['missing', 'no_params', 'finish', 'bad_schema', 'lookup', 'lookup'],
                knowledge: true,
                fills: { code: { type: 'integer', pattern: '^[0-9]+$' }, size: { type: 'choice' } },
              },
              collect: { slot: 'q' },
              on_error: 'nowhere',
            },
          ],
        },
      ],
      actions: {
        no_params: { type: 'http', method: 'GET', url: 'https://example.com/a' },
        bad_schema: { type: 'http', method: 'GET', url: 'https://example.com/b', parameters: { type: 'object', properties: { a: { type: 'strng' } } } },
        not_object: { type: 'http', method: 'GET', url: 'https://example.com/c', parameters: { type: 'string' } },
        remote: {
          type: 'http',
          method: 'GET',
          url: 'https://example.com/d',
          parameters: { type: 'object', properties: { a: { $ref: 'https://evil.example/s.json' } } },
        },
        bad_pattern: {
          type: 'http',
          method: 'GET',
          url: 'https://example.com/e',
          parameters: { type: 'object', properties: { a: { type: 'string', pattern: '(?<=a)b' } } },
        },
        lookup: {
          type: 'http',
          method: 'GET',
          url: 'https://example.com/{{ args.id }}',
          parameters: { type: 'object', properties: { id: { type: 'string' } } },
        },
      },
    });
    const found = validateDefinition(def).map((p) => `${p.path}: ${p.message}`);
    const at = 'capabilities.help.phases.assist';
    expect(found).toEqual(
      expect.arrayContaining([
        `${at}.collect: a generate phase cannot also have collect`,
        `${at}.generate.instructions: secrets can be read only in action url, headers and body`,
        `${at}.generate.tools[0]: unknown action "missing"`,
        `${at}.generate.tools[1]: action "no_params" needs parameters (a JSON Schema of its arguments) to be offered as a tool`,
        `${at}.generate.tools[2]: "finish" is a built-in tool, always offered: remove it from tools`,
        `${at}.generate.tools[5]: "lookup" is listed twice`,
        `${at}.generate.knowledge: the agent has no knowledge documents or knowledge_sources`,
        `${at}.generate.fills.code.pattern: pattern applies only to type text`,
        `${at}.generate.fills.size.choices: type choice needs choices`,
        `${at}.on_error: unknown phase "nowhere" (or use "escalate")`,
        'actions.not_object.parameters: must be a JSON Schema of type object (the arguments are an object)',
        'actions.remote.parameters: only local references ("#/…") are allowed',
      ]),
    );
    expect(found.find((f) => f.startsWith('actions.bad_schema.parameters: invalid JSON Schema'))).toBeDefined();
    expect(found.find((f) => f.startsWith('actions.bad_pattern.parameters: invalid JSON Schema'))).toBeDefined();
    expect(found.some((f) => f.startsWith('actions.lookup'))).toBe(false);
    // A fill slot needs its type.
    expect(
      AgentDefinition.safeParse({
        name: 'x',
        capabilities: [{ name: 'a', phases: [{ id: 'p', generate: { instructions: 'x', fills: { s: { pattern: 'a' } } } }] }],
      }).success,
    ).toBe(false);
    // Slots a model may fill count as known.
    expect(slotWarnings(def).map((w) => w.message.slice(0, 13))).toEqual(['"slots.other"']);
  });

  it('accepts a sound definition', () => {
    const def = AgentDefinition.parse({ name: 'x', capabilities: [{ name: 'a', examples: ['x'], phases: [{ id: 'p', say: 'hi {{ user.name }}' }] }] });
    expect(validateDefinition(def)).toEqual([]);
  });
});

describe('every problem in one answer (definitionProblems)', () => {
  const phases = (...p: object[]) => ({ name: 'x', capabilities: [{ name: 'a', examples: ['hello there'], phases: p }] });

  it('reports the problems inside the one alternative of a union whose type matched, where zod says "Invalid input"', () => {
    const { problems } = definitionProblems(phases({ id: 'p', say: 'hi', next: [{ goto: 'p', unless: 'x' }] }));
    expect(problems).toEqual([{ path: 'capabilities[0].phases[0].next[0].unless', message: 'unknown key "unless"' }]);
    const typed = definitionProblems(phases({ id: 'p', say: 'hi', next: 4 }));
    expect(typed.problems).toEqual([{ path: 'capabilities[0].phases[0].next', message: 'expected text or a list; got a number (4)' }]);
  });

  it('checks references in what the schema accepted, and leaves out what taking the rest out could cause', () => {
    // `end: 7` is refused; without it, `q` would look like a phase with no way out, which is not in
    // the text, so only the schema's problem is reported there, while the sibling's reference is.
    const { problems } = definitionProblems(phases({ id: 'p', say: 'hi', next: 'nowhere' }, { id: 'q', say: 'bye', end: 7 }));
    expect(problems.map((p) => p.path)).toEqual(['capabilities[0].phases[1].end', 'capabilities.a.phases.p.next']);
    // A missing required field takes its item's list out of the check; the rest is still checked.
    const missing = definitionProblems({
      name: 'x',
      routing: { fallback: 'nope' },
      capabilities: [{ name: 'a', phases: [{ id: 'p', say: 'pick', options: [{ label: 'one' }] }] }],
    });
    expect(missing.problems.map((p) => p.path)).toEqual(['capabilities[0].phases[0].options[0].value', 'routing.fallback']);
  });

  it('answers the parsed definition when there is nothing to report', () => {
    const ok = definitionProblems(phases({ id: 'p', say: 'hi' }));
    expect(ok.problems).toEqual([]);
    expect(ok.definition?.capabilities[0].phases[0].id).toBe('p');
  });
});
