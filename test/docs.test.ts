// Every whole agent definition in the docs (a YAML or JSON block with `name` and a list of
// capabilities, not a sketch that elides parts as `[...]` or `{...}`) is PUT as it is written and
// must be accepted: a new user copies these.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { databases } from './helpers/databases.js';
import { appFixture } from './helpers/fixture.js';

interface Block {
  file: string;
  line: number;
  lang: 'yaml' | 'json';
  text: string;
}

function blocks(file: string): Block[] {
  const out: Block[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(yaml|yml|json)\s*$/.exec(lines[i]);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    out.push({ file, line: i + 1, lang: open[1] === 'json' ? 'json' : 'yaml', text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return out;
}

const isWhole = (b: Block): boolean => {
  if (/\[\.\.\.\]|\{\.\.\.\}/.test(b.text)) return false;
  let v: unknown;
  try {
    v = b.lang === 'json' ? JSON.parse(b.text) : parseYaml(b.text);
  } catch {
    return false;
  }
  return !!v && typeof v === 'object' && 'name' in v && Array.isArray((v as { capabilities?: unknown }).capabilities);
};

const files = ['README.md', ...readdirSync('docs').map((f) => join('docs', f))].filter((f) => f.endsWith('.md'));
const whole = files.flatMap(blocks).filter(isWhole);

describe('whole definitions in the docs', () => {
  const f = appFixture(databases[0], { config: { llm: undefined } });

  it('finds the complete examples (agents.md, generative.md)', () => {
    expect(whole.map((b) => b.file)).toEqual(expect.arrayContaining(['docs/agents.md', 'docs/generative.md']));
  });

  it.each(whole.map((b) => [`${b.file}:${b.line}`, b] as const))('accepts %s as written', async (_where, b) => {
    const r = await request(f.app.app)
      .put(`/api/v1/agents/doc-${b.line}`)
      .set('tenant-id', 'docs')
      .set('content-type', b.lang === 'json' ? 'application/json' : 'application/yaml')
      .send(b.text);
    expect(r.status, JSON.stringify(r.body.errors ?? r.body)).toBe(200);
    // A copied example teaches the recommended fallback: none whose examples replace the class of everyday messages.
    expect(r.body.warnings.filter((w: { code: string }) => w.code === 'thin_fallback')).toEqual([]);
  });

  it("sends an off-topic message to agents.md's complete example's fallback", async () => {
    const b = whole.find((x) => x.file === 'docs/agents.md' && /routing:\s*\n\s*fallback: fallback/.test(x.text))!;
    await request(f.app.app).put('/api/v1/agents/complete').set('tenant-id', 'docs').set('content-type', 'application/yaml').send(b.text).expect(200);
    for (const message of ["what's the weather like?", 'my car broke down']) {
      const r = await request(f.app.app).post('/api/v1/agents/complete/converse').set('tenant-id', 'docs').send({ message }).expect(200);
      expect(r.body.state.capability, message).toBe('fallback');
    }
  });
});
