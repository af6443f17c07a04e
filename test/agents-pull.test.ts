// `agents pull`'s merge (server/src/agents-pull.ts): a server's definition written into the team's
// file changes the lines that differ and no other, and the file then reads as that definition.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AgentDefinition } from '@switchboard/contract';
import { readAgentFile } from '../server/src/agents-loader.js';
import { mergeIntoFile } from '../server/src/agents-pull.js';
import { canonicalJson } from '../server/src/lib/canonical.js';
import { EXAMPLE_AGENT } from './helpers/example-agent.js';

const dir = mkdtempSync(join(tmpdir(), 'switchboard-pull-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = {};
const example = readFileSync(EXAMPLE_AGENT, 'utf8');

/** The definition `apply` would send for this text. */
async function applied(text: string, name = 'acme-support.yaml'): Promise<AgentDefinition> {
  const file = join(dir, name);
  writeFileSync(file, text);
  return (await readAgentFile(file, env)).definition;
}
/** The lines of `after` that are not in `before`, and those gone. */
function lineDiff(before: string, after: string): { added: string[]; removed: string[] } {
  const a = before.split('\n');
  const b = after.split('\n');
  return { added: b.filter((l) => !a.includes(l)), removed: a.filter((l) => !b.includes(l)) };
}
const same = (a: unknown, b: unknown) => expect(canonicalJson(a)).toBe(canonicalJson(b));

describe('agents pull: merging a definition into its file', () => {
  it('leaves a file that already holds the definition as it is, defaults and ${NAME} placeholders included', async () => {
    const server = await applied(example);
    const r = mergeIntoFile('acme-support.yaml', example, server, env);
    expect(r).toEqual({ text: example, changed: [], kept: [] });
  });

  it("adds a reviewer's examples and out-of-scope messages as lines of their own, in each list's style, and nothing else moves", async () => {
    const server = structuredClone(await applied(example));
    server.capabilities.find((c) => c.name === 'order_status')!.examples!.push('where is the stuff I bought'); // a block list
    server.capabilities.find((c) => c.name === 'greeting')!.examples!.push('yo'); // a flow list on one line
    server.capabilities.find((c) => c.name === 'human')!.examples!.push('a person, please'); // one item per line, trailing comma
    server.routing = { ...server.routing, out_of_scope: ["What's the weather like?"] };
    server.capabilities.find((c) => c.name === 'greeting')!.description = 'Say hello!';
    const r = mergeIntoFile('acme-support.yaml', example, server, env);
    expect(r.changed).toEqual([
      'capabilities[0].description',
      'capabilities[0].examples[5]',
      'capabilities[1].examples[12]',
      'capabilities[5].examples[8]',
      'routing',
    ]);
    const { added, removed } = lineDiff(example, r.text);
    expect(removed).toEqual(['    description: Say hello', '    examples: [hello, hi there, good morning, hey, hola]']);
    expect(added).toEqual([
      '    description: Say hello!',
      '    examples: [hello, hi there, good morning, hey, hola, yo]',
      '      - where is the stuff I bought',
      '        "a person, please",',
      'routing:',
      '  out_of_scope:',
      "    - What's the weather like?",
    ]);
    same(await applied(r.text), server);
  });

  it('keeps a ${NAME} placeholder whose filled-in value differs, and says so', async () => {
    const server = structuredClone(await applied(example));
    server.actions!.get_order!.url = 'http://10.0.0.5:8080/orders/{{ slots.order_id }}';
    const r = mergeIntoFile('acme-support.yaml', example, server, env);
    expect(r).toMatchObject({
      text: example,
      changed: [],
      kept: [{ path: 'actions.get_order.url', server: 'http://10.0.0.5:8080/orders/{{ slots.order_id }}' }],
    });
  });

  it('removes what the server no longer has and adds what the file lacked, its comments kept, when no line-wise edit will do', async () => {
    const server = structuredClone(await applied(example));
    server.capabilities = server.capabilities.filter((c) => c.name !== 'priority_support');
    const r = mergeIntoFile('acme-support.yaml', example, server, env);
    expect(r.changed).toEqual(['capabilities']);
    same(await applied(r.text), server);
    const comments = (t: string) => t.split('\n').filter((l) => l.trim().startsWith('#')).length;
    // The comments above the removed capability go with it; every other one stays.
    expect(comments(r.text)).toBeGreaterThan(comments(example) - 4);
    expect(r.text).toContain('# ORDERS_URL is filled in from SWITCHBOARD_VAR_ORDERS_URL');
  });

  it('merges into a JSON file as JSON', async () => {
    const json = `${JSON.stringify(await applied(example), null, 2)}\n`;
    const server = structuredClone(await applied(json, 'acme-support.json'));
    server.capabilities[0]!.examples!.push('yo');
    const r = mergeIntoFile('acme-support.json', json, server, env);
    expect(r.changed).toEqual(['capabilities[0].examples[5]']);
    same(JSON.parse(r.text), server);
  });

  it('refuses a file that is not YAML, and changes nothing', async () => {
    const server = await applied(example);
    expect(() => mergeIntoFile('broken.yaml', 'name: [unclosed', server, env)).toThrow(/broken\.yaml is not valid YAML/);
  });
});
