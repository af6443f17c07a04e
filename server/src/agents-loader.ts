// Loads agent files (YAML or JSON, one agent each, named <slug>.yaml / <slug>.json) into a tenant.
// Files may name deployment values as ${NAME} or ${NAME:-default}, filled at load time from the
// environment's SWITCHBOARD_VAR_<NAME> (only in files: a definition sent over the API is taken
// as it is, and no template can read the environment).
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { TestFile, type AgentDefinition, type DefinitionWarning, type Release, type TestCase } from '@switchboard/contract';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { DefinitionError, type FieldProblem } from './errors.js';
import { parseYamlSource, withPositions } from './lib/yaml-source.js';
import { definitionProblems } from './engine/definition-problems.js';
import type { AgentService } from './service/agents/agent-service.js';
import type { ReleaseService } from './service/releases/releases.js';

export interface AppliedAgent {
  slug: string;
  version: number;
  changed: boolean;
  /** The version this file replaced, when there was one. */
  replaced: number | null;
  /** Stored as a draft: `version` is the draft's, and the current version did not change. */
  draft: boolean;
  warnings: DefinitionWarning[];
  substitutions: Substitution[];
  /** The step of the release record, with its gates, when the file made a version current. */
  release: Release | null;
}

const VAR_PREFIX = 'SWITCHBOARD_VAR_';

/** One ${NAME} a file used, and the value it was given: from SWITCHBOARD_VAR_<NAME>, else the file's default. */
export interface Substitution {
  name: string;
  value: string;
  from: 'environment' | 'default';
}

/** Fills ${NAME} and ${NAME:-default} from SWITCHBOARD_VAR_<NAME>; an unset one without default is an error. */
export function expandVariables(text: string, env: NodeJS.ProcessEnv = process.env): { text: string; substitutions: Substitution[] } {
  const missing: string[] = [];
  const used = new Map<string, Substitution>();
  const out = text.replace(/\$\{([A-Z][A-Z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
    const v = env[`${VAR_PREFIX}${name}`];
    if (v !== undefined && v !== '') {
      used.set(name, { name, value: v, from: 'environment' });
      return v;
    }
    if (fallback !== undefined) {
      used.set(name, { name, value: fallback, from: 'default' });
      return fallback;
    }
    missing.push(`${VAR_PREFIX}${name}`);
    return '';
  });
  if (missing.length) throw new Error(`set ${[...new Set(missing)].join(', ')} (the file reads ${missing.length === 1 ? 'it' : 'them'} as \${…})`);
  return { text: out, substitutions: [...used.values()] };
}

/** A line per substitution, for the CLI: which value each ${NAME} was given, and from where. */
export function describeSubstitutions(substitutions: Substitution[]): string[] {
  return substitutions.map((s) => {
    const value = JSON.stringify(s.value.length > 120 ? `${s.value.slice(0, 120)}…` : s.value);
    return s.from === 'environment'
      ? `  \${${s.name}} = ${value} (from ${VAR_PREFIX}${s.name})`
      : `  \${${s.name}} = ${value} (the file's default: ${VAR_PREFIX}${s.name} is not set here)`;
  });
}

/** Reads, fills and checks one agent file; problems carry the YAML line and column. */
export async function readAgentFile(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ slug: string; definition: AgentDefinition; substitutions: Substitution[] }> {
  const { text, substitutions } = expandVariables(await readFile(file, 'utf8'), env);
  const source = extname(file) === '.json' ? null : parseYamlSource(text);
  const raw: unknown = source ? source.value : JSON.parse(text);
  const located = (problems: FieldProblem[]) => (source ? withPositions(problems, source) : problems);
  const { definition, problems } = definitionProblems(raw);
  if (!definition) throw new DefinitionError(located(problems));
  return { slug: basename(file, extname(file)), definition, substitutions };
}

/**
 * Stores one agent file as PUT /agents/:slug does: a new version made current goes through the
 * release gates of the current version's policy (service/releases.ts), and is refused (kept as a
 * draft) when one fails.
 */
export async function applyAgentFile(
  app: { agents: AgentService; releases: ReleaseService },
  tenantId: string,
  file: string,
  /** `forceReason`: release past failing gates, recorded as forced with this reason. */
  /** `note`: what made a new version ("agents apply FILE" by default). */
  opts: { activate?: boolean; requestId?: string; forceReason?: string; note?: string } = {},
): Promise<AppliedAgent> {
  const { slug, definition, substitutions } = await readAgentFile(file);
  const before = await app.agents.currentVersion(tenantId, slug);
  const { agent, changed, version, warnings, release } = await app.releases.put(
    tenantId,
    slug,
    definition,
    { activate: opts.activate ?? true, note: opts.note ?? `agents apply ${file}`, ...(opts.forceReason ? { forceReason: opts.forceReason } : {}) },
    { by: null, requestId: opts.requestId ?? `apply:${basename(file)}` },
  );
  return {
    slug,
    version,
    changed,
    replaced: changed && before !== null && before !== agent.version ? before : null,
    draft: version !== agent.version,
    warnings,
    substitutions,
    release,
  };
}

/** A test conversation file (`<agent>.test.yaml`), which lives beside agent files but is not one. */
export function isTestFile(name: string): boolean {
  return /\.test\.(ya?ml|json)$/.test(name);
}

/** A test conversation file, checked: its problems in one message. */
export async function readTestFile(file: string): Promise<z.infer<typeof TestFile>> {
  const raw: unknown = parseYaml(await readFile(file, 'utf8'));
  const parsed = TestFile.safeParse(raw);
  if (!parsed.success) {
    throw new Error(parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; '));
  }
  return parsed.data;
}

/** The test conversations beside an agent file (`<slug>.test.yaml`, .yml or .json), with the file they came from; null when there is none. */
export async function testsBeside(agentFile: string): Promise<{ file: string; tests: TestCase[] } | null> {
  const slug = basename(agentFile, extname(agentFile));
  const names = new Set(await readdir(dirname(agentFile)));
  for (const ext of ['yaml', 'yml', 'json']) {
    const name = `${slug}.test.${ext}`;
    if (names.has(name)) {
      const file = join(dirname(agentFile), name);
      const spec = await readTestFile(file);
      if (spec.agent !== slug) throw new Error(`${file} tests agent "${spec.agent}", not "${slug}" beside it`);
      return { file, tests: spec.tests };
    }
  }
  return null;
}

/** The agent files of a folder; two files for one slug (x.yaml and x.json) is an error naming both. */
export async function agentFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => /\.(ya?ml|json)$/.test(n) && !isTestFile(n)).sort();
  const bySlug = new Map<string, string[]>();
  for (const n of names) bySlug.set(basename(n, extname(n)), [...(bySlug.get(basename(n, extname(n))) ?? []), n]);
  const clashes = [...bySlug.entries()].filter(([, files]) => files.length > 1);
  if (clashes.length) {
    throw new Error(clashes.map(([slug, files]) => `${files.map((f) => join(dir, f)).join(' and ')} both define agent "${slug}": keep one`).join('; '));
  }
  return names.map((n) => join(dir, n));
}

export function describeDefinitionError(file: string, err: unknown): string {
  if (err instanceof DefinitionError) {
    const where = (e: FieldProblem) => (e.line !== undefined ? ` (line ${e.line}, column ${e.column})` : '');
    return `${file}: ${err.message}\n${(err.errors ?? []).map((e) => `  ${e.path}: ${e.message}${where(e)}`).join('\n')}`;
  }
  return `${file}: ${(err as Error).message}`;
}
