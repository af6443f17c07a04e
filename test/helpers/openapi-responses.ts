// Every response the test suite receives from the server, checked against the committed
// openapi.json: the status must be documented for the operation, the content type declared, and
// a JSON body valid against the document's schema (JSON Schema 2020-12, with ajv). The document's
// objects are read as closed here (no property it does not name), so an undocumented field fails
// the test that received it; the published document leaves them open so that clients keep
// working when a field is added. test/setup/openapi-check.ts hooks this into supertest and fetch.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const DOC_ID = 'openapi.json';
const doc = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as Json;

/** Objects that name their properties and say nothing of others become closed (a copy; the document is unchanged). */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (!isObj(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === 'example' || k === 'examples' ? v : closed(v);
  if (isObj(out.properties) && out.additionalProperties === undefined && out.unevaluatedProperties === undefined) out.unevaluatedProperties = false;
  return out;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
addFormats.default(ajv);
ajv.addSchema(closed({ ...doc, $id: DOC_ID }) as Json);

export interface Operation {
  key: string;
  /** The contract's name of the route. */
  id: string;
  method: string;
  pattern: RegExp;
  responses: Json;
}

const pointer = (parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export const OPERATIONS: Operation[] = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
  Object.entries(item as Json).map(([method, op]) => ({
    key: `${method.toUpperCase()} ${path}`,
    id: (op as { operationId: string }).operationId,
    method: method.toUpperCase(),
    pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    responses: (op as { responses: Json }).responses,
  })),
);

/** Specific templates before ones with parameters where they could overlap (`/versions` before `{id}`). */
const byPath = [...OPERATIONS].sort((a, b) => (a.pattern.source.match(/\[\^\/\]\+/g)?.length ?? 0) - (b.pattern.source.match(/\[\^\/\]\+/g)?.length ?? 0));

export function operationOf(method: string, url: string): Operation | undefined {
  const path = new URL(url, 'http://x').pathname;
  return byPath.find((o) => o.method === method.toUpperCase() && o.pattern.test(path));
}

const validators = new Map<string, ValidateFunction>();
function validator(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (!v) validators.set(ref, (v = ajv.compile({ $ref: `${DOC_ID}#${ref}` })));
  return v;
}

/**
 * The errors of a discriminated union's own branch: a value of another branch's `type` fails
 * every branch, and the first ones (whose type did not match) say nothing.
 */
function ofTheBranch(errors: ErrorObject[]): ErrorObject[] {
  const otherBranches = errors
    .filter((e) => e.keyword === 'enum' && e.instancePath.endsWith('/type') && e.schemaPath.endsWith('/properties/type/enum'))
    .map((e) => ({ at: e.instancePath.slice(0, -'/type'.length), schema: e.schemaPath.slice(0, -'/properties/type/enum'.length) }));
  const kept = errors.filter((e) => e.keyword !== 'oneOf' && !otherBranches.some((b) => e.instancePath.startsWith(b.at) && e.schemaPath.startsWith(b.schema)));
  return kept.length ? kept : errors;
}

/** Whether a request body is what the operation's `media` type says (closed objects); the errors when not. */
export function checkRequestBody(op: Operation, media: string, body: unknown): string[] {
  const validate = validator(`/paths/${pointer([op.key.split(' ')[1], op.method.toLowerCase(), 'requestBody', 'content', media, 'schema'])}`);
  return validate(body) ? [] : ofTheBranch(validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

export interface Received {
  method: string;
  url: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (JSON media types only). */
  body?: unknown;
  /** Whether the response had a body at all. */
  hasBody: boolean;
}

/** The operation the response answered, or null when its path is not one of the document's; throws on a violation. */
export function checkResponse(r: Received): string | null {
  const op = operationOf(r.method, r.url);
  if (!op) return null;
  const where = `${op.key} → ${r.status}`;
  const status = String(r.status);
  const key = [status, `${status[0]}XX`, 'default'].find((k) => k in op.responses);
  if (!key) throw new Error(`openapi.json: ${where} is not a documented status of the operation (it has ${Object.keys(op.responses).join(', ')})`);
  let response = op.responses[key] as Json;
  let at = `/paths/${pointer([op.key.split(' ')[1], op.method.toLowerCase(), 'responses', key])}`;
  if (typeof response.$ref === 'string') {
    at = response.$ref.slice(1);
    response = (doc.components as { responses: Json }).responses[response.$ref.split('/').pop()!] as Json;
  }
  const content = response.content as Json | undefined;
  const type = String(r.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  if (!content) {
    if (r.hasBody) throw new Error(`openapi.json: ${where} documents no body, the server sent one (${type || 'no content type'})`);
    return op.key;
  }
  if (!r.hasBody && status === '204') return op.key;
  // Media types compare without their parameters (`text/plain; version=0.0.4` is text/plain).
  const declared = Object.keys(content).find((k) => k.split(';')[0].trim().toLowerCase() === type);
  if (!declared) throw new Error(`openapi.json: ${where} answered ${type || 'no content type'}, the document declares ${Object.keys(content).join(', ')}`);
  for (const [name, header] of Object.entries((response.headers as Json | undefined) ?? {})) {
    if ((header as { required?: boolean }).required && r.headers[name.toLowerCase()] === undefined)
      throw new Error(`openapi.json: ${where} lacks the header ${name}`);
  }
  if (type !== 'application/json' && !type.endsWith('+json')) return op.key;
  const validate = validator(`${at}/content/${pointer([declared, 'schema'])}`);
  if (!validate(r.body)) {
    const errors = ofTheBranch(validate.errors ?? [])
      .slice(0, 5)
      .map((e) => `${e.instancePath || '/'} ${e.message ?? ''}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
    throw new Error(`openapi.json: the ${where} body breaks the document:\n  ${errors.join('\n  ')}\nbody: ${JSON.stringify(r.body).slice(0, 600)}`);
  }
  return op.key;
}
