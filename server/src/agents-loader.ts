// Loads agent files (YAML or JSON, one agent each, named <slug>.yaml / <slug>.json) into a tenant.
import { readdir, readFile } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { AgentDefinition } from '@switchboard/contract';
import { DefinitionError } from './errors.js';
import { jsonPath } from './http/problem.js';
import type { AgentService } from './service/agent-service.js';

export interface AppliedAgent {
  slug: string;
  version: number;
  changed: boolean;
}

export async function readAgentFile(file: string): Promise<{ slug: string; definition: AgentDefinition }> {
  const text = await readFile(file, 'utf8');
  const raw = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
  const parsed = AgentDefinition.safeParse(raw);
  if (!parsed.success) {
    throw new DefinitionError(parsed.error.issues.map((i) => ({ path: jsonPath(i.path), message: i.message })));
  }
  return { slug: basename(file, extname(file)), definition: parsed.data };
}

export async function applyAgentFile(agents: AgentService, tenantId: string, file: string): Promise<AppliedAgent> {
  const { slug, definition } = await readAgentFile(file);
  const { agent, changed } = await agents.put(tenantId, slug, definition);
  return { slug, version: agent.version, changed };
}

export async function agentFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => /\.(ya?ml|json)$/.test(n)).sort();
  return names.map((n) => join(dir, n));
}

export function describeDefinitionError(file: string, err: unknown): string {
  if (err instanceof DefinitionError) {
    return `${file}: ${err.message}\n${(err.errors ?? []).map((e) => `  ${e.path}: ${e.message}`).join('\n')}`;
  }
  return `${file}: ${(err as Error).message}`;
}
