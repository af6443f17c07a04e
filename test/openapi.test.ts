import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';
import { contract, RESOURCES } from '@switchboard/contract';
import { lintOpenApi } from '../scripts/lint-openapi.js';
import { OPENAPI_FILE, renderOpenApi } from '../scripts/openapi.js';
import { COLLECTION_FILES, COLLECTIONS_DIR, renderCollections } from '../scripts/collections.js';
import { PEOPLE_FILE, renderRoleTable, withRoleTable } from '../scripts/people-table.js';

describe('openapi.json', () => {
  it('is what the contract generates now (run `npm run openapi` after changing the contract)', () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(renderOpenApi());
  });

  it("has docs/people.md's roles table generated from the contract now (run `npm run openapi`)", () => {
    const text = readFileSync(PEOPLE_FILE, 'utf8');
    expect(text).toBe(withRoleTable(text));
    expect(renderRoleTable()).toContain('| `releases.write` | ✓ |  | ✓ |');
    expect(renderRoleTable()).toContain('`activateVersion` (POST /api/v1/agents/{slug}/versions/{version}/activate)');
  });

  it("has its REST clients' collections converted from it now (run `npm run openapi`), every request with no made-up value", async () => {
    const files = await renderCollections(JSON.parse(renderOpenApi()));
    expect(Object.keys(files).sort()).toEqual(Object.values(COLLECTION_FILES).sort());
    for (const [name, text] of Object.entries(files)) expect(readFileSync(new URL(name, COLLECTIONS_DIR), 'utf8'), name).toBe(text);
    // Path variables are the examples npm start answers, or the variables the README's folder sets
    // (and a channel's kind, which a PUT of the channel creates; the help centre source npm start loads).
    const collection = JSON.parse(files[COLLECTION_FILES.collection]);
    const requests = (list: { item?: unknown[]; request?: { url: { variable?: { key: string; value: string }[] } } }[]): typeof list =>
      list.flatMap((i) => (i.item ? requests(i.item as typeof list) : [i]));
    const values = requests(collection.item).flatMap((i) => (i.request?.url.variable ?? []).map((v) => v.value));
    expect(values.length).toBeGreaterThan(40);
    for (const v of values)
      expect(v).toMatch(
        /^(acme-support|1|u-42|ORDERS_TOKEN|help-centre|shop-help|slack|\{\{conversation_id\}\}|\{\{replay_id\}\}|\{\{evaluation_id\}\}|[0-9a-f-]{36})$/,
      );
    expect(files[COLLECTION_FILES.collection]).not.toContain('<string>');
    // The REST Client file reads the id the named first request answered.
    const rest = files[COLLECTION_FILES.restClient];
    expect(rest).toContain('# @name start');
    expect(rest.match(/\{\{start\.response\.body\.\$\.conversation_id\}\}/g)).toHaveLength(3);
  }, 60_000);

  it('files every route of the contract under exactly one resource, whose tag it carries', () => {
    const owners = new Map<string, string[]>();
    for (const [name, r] of Object.entries(RESOURCES)) for (const route of Object.keys(r.routes)) owners.set(route, [...(owners.get(route) ?? []), name]);
    const routes = [...Object.keys(contract.api), ...Object.keys(contract.ops), ...Object.keys(contract.widget), ...Object.keys(contract.auth)];
    expect(routes.length).toBe(new Set(routes).size);
    for (const route of routes) expect(owners.get(route), route).toHaveLength(1);
    expect([...owners.keys()].sort()).toEqual([...routes].sort());
    const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
    for (const ops of Object.values(doc.paths) as Record<string, { operationId: string; tags: string[] }>[])
      for (const op of Object.values(ops)) {
        const resource = owners.get(op.operationId)![0] as keyof typeof RESOURCES;
        expect(op.tags, op.operationId).toEqual([RESOURCES[resource].tag]);
      }
  });

  it('tags every operation with its resource: Operations holds the health checks and metrics only', () => {
    const doc = JSON.parse(renderOpenApi());
    const tagged = new Map<string, string[]>();
    for (const ops of Object.values(doc.paths) as Record<string, { operationId?: string; tags?: string[] }>[]) {
      for (const op of Object.values(ops)) {
        if (!op.operationId) continue;
        expect(op.tags, op.operationId).toHaveLength(1);
        tagged.set(op.tags![0], [...(tagged.get(op.tags![0]) ?? []), op.operationId]);
      }
    }
    expect(tagged.get('Operations')!.sort()).toEqual(['healthz', 'metrics', 'readyz']);
    expect(tagged.get('Releases')!.sort()).toEqual(['endSplit', 'listReleases', 'promoteSplit', 'putSplit', 'verifyReleases']);
    // Every tag an operation has is described at the top of the document.
    expect([...tagged.keys()].sort()).toEqual(doc.tags.map((t: { name: string }) => t.name).sort());
  });

  it('documents every route of the contract with a summary, a description and every error response', () => {
    const doc = JSON.parse(renderOpenApi());
    const resolve = (r: { $ref?: string; description?: string }) => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()!] : r);
    const routes = [...Object.values(contract.api), ...Object.values(contract.ops), ...Object.values(contract.widget), ...Object.values(contract.auth)];
    for (const route of routes) {
      const path = route.path.replace(/:([a-z_]+)/g, '{$1}');
      const op = doc.paths[path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      expect(op.summary).toBeTruthy();
      expect(op.description).toBeTruthy();
      expect(op.tags).toHaveLength(1);
      for (const [status, r] of Object.entries(op.responses as Record<string, { description: string }>)) {
        expect(resolve(r).description, `${route.method} ${route.path} ${status}`).toBeTruthy();
        expect(resolve(r).description, `${route.method} ${route.path} ${status}`).not.toBe(status);
      }
    }
    const converse = doc.paths['/api/v1/agents/{slug}/converse'].post;
    const parameter = (p: { $ref?: string }) => (p.$ref ? doc.components.parameters[p.$ref.split('/').pop()!] : p);
    const headers = converse.parameters.map(parameter).filter((p: { in: string }) => p.in === 'header');
    expect(headers.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['user-id', 'x-request-id', 'idempotency-key']));
    // Every path parameter has an example that npm start answers (the README's conversation, version 1).
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { parameters?: { $ref?: string }[] }>>))
      for (const [method, op] of Object.entries(item))
        for (const p of (op.parameters ?? []).map(parameter).filter((x: { in: string }) => x.in === 'path'))
          expect(p.example, `${method} ${path} ${p.name}`).toBeDefined();
    expect(parameter(doc.paths['/api/v1/agents/{slug}/conversations/{id}/history'].get.parameters[1])).toMatchObject({
      name: 'id',
      example: '6f1c2c49-5f0e-4f4b-9a39-7b8f0f2d6a10',
    });
    expect(doc.components.examples.ReplayRequest.value.version).toBe(1);
    // Optional parameters have a valid example or none: never one a server refuses.
    expect(doc.components.parameters.Cursor.example).toBeUndefined();
    // Every response declares x-request-id; 429 and 503 declare retry-after.
    const response = (r: { $ref?: string }) => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()!] : r);
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>))
      for (const [method, op] of Object.entries(item))
        for (const [status, r] of Object.entries(op.responses)) {
          expect(Object.keys(response(r).headers ?? {}), `${method} ${path} ${status}`).toContain('x-request-id');
          if (status === '429' || status === '503') expect(Object.keys(response(r).headers), `${method} ${path} ${status}`).toContain('retry-after');
        }
    // The tenant comes through a security scheme: the header, or an API key that names it.
    expect(converse.security).toEqual([{ tenantHeader: [] }, { apiKey: [] }, { session: [] }]);
    expect(doc.components.securitySchemes.tenantHeader).toMatchObject({ type: 'apiKey', in: 'header', name: 'tenant-id' });
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    // The example starts a conversation: trying it does not answer 404.
    const start = converse.requestBody.content['application/json'].examples.ConverseStart.$ref.split('/').pop();
    expect(doc.components.examples[start].value).not.toHaveProperty('conversation_id');
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(doc.info).toMatchObject({ version: pkg.version, license: { name: 'Apache-2.0' } });
  });

  it('names its shared schemas as components and stays under 8 KB per operation on average', () => {
    const text = renderOpenApi();
    const operations = Object.values(JSON.parse(text).paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(text.length / operations).toBeLessThan(8 * 1024);
    const schemas = JSON.parse(text).components.schemas;
    for (const name of [
      'Conversation',
      'ConversationDetail',
      'ConversationSummary',
      'Turn',
      'Agent',
      'AgentDefinition',
      'Problem',
      'RoutingDecisionEntry',
      'ActionCallEntry',
      'TurnTimingEntry',
      'AuditEntry',
      'Replay',
      'ReplaySummary',
    ]) {
      expect(schemas, name).toHaveProperty(name);
    }
  });

  it('answers every success with a named schema, and repeats no large schema inline', () => {
    const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
    const inline: string[] = [];
    for (const ops of Object.values(doc.paths) as Record<
      string,
      { operationId: string; responses: Record<string, { content?: Record<string, { schema: object }> }> }
    >[])
      for (const op of Object.values(ops))
        for (const [status, r] of Object.entries(op.responses))
          if (status.startsWith('2') && r.content?.['application/json'] && !('$ref' in r.content['application/json'].schema)) inline.push(op.operationId);
    expect(inline).toEqual([]);
    // Each component is the export of its name: the reply's Option, the definition's OptionDef.
    expect(doc.components.schemas.ConverseResponse.properties.response.properties.options.items).toEqual({ $ref: '#/components/schemas/Option' });
    expect(Object.keys(doc.components.schemas.OptionDef.properties)).toEqual(expect.arrayContaining(Object.keys(doc.components.schemas.Option.properties)));
    expect(doc.components.schemas.OptionDef).not.toEqual(doc.components.schemas.Option);
    // Every page wrapper is a component of its own.
    for (const name of ['ConversationPage', 'VersionPage', 'ReleasePage', 'ChannelList', 'KeyList', 'JobStarted'])
      expect(doc.components.schemas, name).toHaveProperty(name);
    // No object schema over 1.5 KB appears twice outside the components.
    const seen = new Map<string, number>();
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(visit);
      if (!node || typeof node !== 'object') return;
      const text = JSON.stringify(node);
      if ((node as { type?: unknown }).type === 'object' && text.length > 1536) seen.set(text, (seen.get(text) ?? 0) + 1);
      Object.values(node).forEach(visit);
    };
    visit(doc.paths);
    expect([...seen.values()].filter((n) => n > 1)).toEqual([]);
  });

  it('maps every discriminator, allows null beside a nullable enum rather than among its values, and gives no property an empty schema', () => {
    const doc = JSON.parse(renderOpenApi());
    const found: string[] = [];
    const walk = (n: unknown, at: string): void => {
      if (Array.isArray(n)) {
        n.forEach((x, i) => walk(x, `${at}/${i}`));
        return;
      }
      if (!n || typeof n !== 'object') return;
      const s = n as { discriminator?: { mapping?: object }; enum?: unknown[]; type?: unknown; oneOf?: unknown[] };
      if (s.discriminator) {
        found.push(at);
        expect(Object.keys(s.discriminator.mapping ?? {}), at).toHaveLength(s.oneOf?.length ?? -1);
      }
      if (s.enum) expect(s.enum, at).not.toContain(null);
      for (const [k, v] of Object.entries(n)) walk(v, `${at}/${k}`);
    };
    walk(doc, '#');
    expect(found).toContain('#/components/schemas/AuditEntry');
    // No property is an empty schema `{}`: converters (openapi-to-postmanv2 under Portman) drop
    // such a property, and a strict object around it then rejects the field it names.
    const empty: string[] = [];
    const props = (n: unknown, at: string): void => {
      if (Array.isArray(n)) return n.forEach((x, i) => props(x, `${at}/${i}`));
      if (!n || typeof n !== 'object') return;
      const p = (n as { properties?: Record<string, object> }).properties ?? {};
      for (const [k, v] of Object.entries(p)) if (Object.keys(v).length === 0) empty.push(`${at}/properties/${k}`);
      for (const [k, v] of Object.entries(n)) props(v, `${at}/${k}`);
    };
    props(doc, '#');
    expect(empty).toEqual([]);
    expect(doc.components.schemas.StatusChangeData.properties.from.anyOf).toEqual([
      expect.objectContaining({ type: 'string', enum: expect.any(Array) }),
      { type: 'null' },
    ]);
  });

  it('passes Redocly recommended and Spectral spectral:oas with no error and no warning', async () => {
    const findings = await lintOpenApi(renderOpenApi());
    expect(findings.map((f) => `${f.tool} ${f.severity} ${f.rule}: ${f.message} (${f.where})`)).toEqual([]);
  }, 60_000);

  it('generates openapi-typescript types with a Conversation a program can use and audit entries that narrow by type', async () => {
    const types = astToString(await openapiTS(JSON.parse(renderOpenApi())));
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-openapi-ts-'));
    try {
      writeFileSync(join(dir, 'api.d.ts'), types);
      writeFileSync(
        join(dir, 'app.ts'),
        `import type { components, paths } from './api.js';
type Conversation = components['schemas']['Conversation'];
type Reply = paths['/api/v1/agents/{slug}/converse']['post']['responses']['200']['content']['application/json'];
const c: Conversation = { id: 'x', agent_id: 'a', capability_id: 'c', user_id: null, status: 'escalated', outcome: 'escalated', turns: [{ role: 'user', message: 'hi', timestamp: '2026-11-22T10:00:00Z' }], created_at: 't', updated_at: 't', completed_at: null };
const r: Reply = { conversation_id: c.id, response: { message: 'hello', phase: 'p', awaiting_input: true, options: [] }, state: { status: c.status, capability: 'x' } };
// @ts-expect-error a status the API does not have
const wrong: Conversation['status'] = 'lost';
type AuditPage = paths['/api/v1/agents/{slug}/conversations/{id}/audit-logs']['get']['responses']['200']['content']['application/json'];
/** Audit entries narrow by their type, as the discriminator's mapping says. */
function read(page: AuditPage): string[] {
  const out: string[] = [];
  for (const e of page.data) {
    if (e.type === 'routing_decision') out.push(e.data.candidates.map((x) => x.capability).join());
    else if (e.type === 'status_change') out.push(e.data.to, e.data.from ?? 'new');
  }
  return out;
}
export { c, r, wrong, read };
`,
      );
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: false },
          files: ['app.ts'],
        }),
      );
      await promisify(execFile)(process.execPath, [join(process.cwd(), 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')]).catch((e) => {
        throw new Error(`${e.stdout}${e.stderr}`);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
