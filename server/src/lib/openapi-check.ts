// A response checked against an OpenAPI 3.1 document: the status must be documented for the
// operation, its declared headers present, the content type declared, and a JSON body valid against the document's schema
// (JSON Schema 2020-12, with ajv). Objects are read as closed here (no property the document does
// not name), so an undocumented field is a violation; the published document leaves them open
// so that clients keep working when a field is added. The test suite checks every response it
// receives with this (test/setup/openapi-check.ts), and `conformance` every response of a live
// deployment, against its own document and the one this release generates.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Objects that name their properties and say nothing of others become closed (a copy; the document is unchanged). */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (!isObj(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === 'example' || k === 'examples' ? v : closed(v);
  if (isObj(out.properties) && out.additionalProperties === undefined && out.unevaluatedProperties === undefined) out.unevaluatedProperties = false;
  return byDiscriminator(out);
}

/**
 * A discriminated union with a mapping is checked as the discriminator says: against the one
 * branch its property names (so that errors are that branch's, however deep its $refs go), and
 * the property must be one the mapping lists.
 */
function byDiscriminator(node: Json): Json {
  const d = node.discriminator;
  if (!isObj(d) || !isObj(d.mapping) || typeof d.propertyName !== 'string' || !Array.isArray(node.oneOf)) return node;
  const property = d.propertyName;
  const { oneOf: _branches, discriminator: _d, ...rest } = node;
  return {
    ...rest,
    type: 'object',
    required: [property],
    properties: { [property]: { enum: Object.keys(d.mapping) } },
    allOf: Object.entries(d.mapping).map(([value, ref]) => ({ if: { properties: { [property]: { const: value } } }, then: { $ref: ref } })),
  };
}

const pointer = (parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
const mediaType = (v: string | string[] | null | undefined) => (Array.isArray(v) ? (v[0] ?? '') : (v ?? '')).split(';')[0].trim().toLowerCase();

export interface Operation {
  /** `METHOD /path/{template}` */
  key: string;
  /** The operationId (the contract's name of the route). */
  id: string;
  method: string;
  path: string;
  pattern: RegExp;
  responses: Json;
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

/**
 * The errors of a discriminated union's own branch: a value of another branch's `type` fails
 * every branch, and the errors of the branches whose type did not match say nothing.
 */
function ofTheBranch(errors: ErrorObject[]): ErrorObject[] {
  const otherBranches = errors
    .filter((e) => e.keyword === 'enum' && e.instancePath.endsWith('/type') && e.schemaPath.endsWith('/properties/type/enum'))
    .map((e) => ({ at: e.instancePath.slice(0, -'/type'.length), schema: e.schemaPath.slice(0, -'/properties/type/enum'.length) }));
  const kept = errors.filter(
    (e) => e.keyword !== 'oneOf' && e.keyword !== 'if' && !otherBranches.some((b) => e.instancePath.startsWith(b.at) && e.schemaPath.startsWith(b.schema)),
  );
  return kept.length ? kept : errors;
}

const describe = (errors: ErrorObject[]) => errors.map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);

/** Each checker's document gets a schema id of its own. */
let documents = 0;

export class OpenApiChecker {
  readonly operations: Operation[];
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly byPath: Operation[];
  private readonly id: string;

  /** `name` tells violations of one document from another's in messages. */
  constructor(
    private readonly doc: Json,
    readonly name = 'openapi.json',
  ) {
    if (!isObj(doc.paths)) throw new Error(`${name} is not an OpenAPI document (no paths)`);
    // ajv-formats is typed against the hoisted copy of ajv, this is the server's (a newer 8.x): the same class API.
    addFormats.default(this.ajv as unknown as Parameters<typeof addFormats.default>[0]);
    this.id = `urn:switchboard:openapi:${++documents}`;
    this.ajv.addSchema(closed({ ...doc, $id: this.id }) as Json);
    this.operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as Json)
        .filter(([method]) => ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(method))
        .map(([method, op]) => ({
          key: `${method.toUpperCase()} ${path}`,
          id: (op as { operationId?: string }).operationId ?? '',
          method: method.toUpperCase(),
          path,
          pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
          responses: (op as { responses: Json }).responses,
        })),
    );
    // Templates with fewer parameters first, where two could match (`/versions` before `{id}`).
    const params = (o: Operation) => (o.path.match(/\{/g) ?? []).length;
    this.byPath = [...this.operations].sort((a, b) => params(a) - params(b));
  }

  operationOf(method: string, url: string): Operation | undefined {
    const path = new URL(url, 'http://x').pathname;
    return this.byPath.find((o) => o.method === method.toUpperCase() && o.pattern.test(path));
  }

  private validator(ref: string): ValidateFunction {
    let v = this.validators.get(ref);
    if (!v) this.validators.set(ref, (v = this.ajv.compile({ $ref: `${this.id}#${ref}` })));
    return v;
  }

  /** Whether a request body is what the operation's `media` type says; the errors when not. */
  checkRequestBody(op: Operation, media: string, body: unknown): string[] {
    const validate = this.validator(`/paths/${pointer([op.path, op.method.toLowerCase(), 'requestBody', 'content', media, 'schema'])}`);
    return validate(body) ? [] : describe(ofTheBranch(validate.errors ?? []));
  }

  /** The operation the response answered, or null when its path is none of the document's; throws on a violation. */
  checkResponse(r: Received): string | null {
    const op = this.operationOf(r.method, r.url);
    if (!op) return null;
    const where = `${op.key} → ${r.status}`;
    const status = String(r.status);
    const key = [status, `${status[0]}XX`, 'default'].find((k) => k in op.responses);
    if (!key) throw new Error(`${this.name}: ${where} is not a documented status of the operation (it has ${Object.keys(op.responses).join(', ')})`);
    let response = op.responses[key] as Json;
    let at = `/paths/${pointer([op.path, op.method.toLowerCase(), 'responses', key])}`;
    if (typeof response.$ref === 'string') {
      at = response.$ref.slice(1);
      response = (this.doc.components as { responses: Json }).responses[response.$ref.split('/').pop()!] as Json;
    }
    // Declared headers (inline or components/headers): a required one must be there, and match its schema's pattern.
    for (const [name, declared] of Object.entries((response.headers as Json | undefined) ?? {})) {
      let header = declared as { $ref?: string; required?: boolean; schema?: { pattern?: string } };
      if (header.$ref) header = (this.doc.components as { headers?: Record<string, typeof header> }).headers?.[header.$ref.split('/').pop()!] ?? {};
      const value = r.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) throw new Error(`${this.name}: ${where} lacks the header ${name}`);
        continue;
      }
      const pattern = header.schema?.pattern;
      if (pattern && !new RegExp(pattern).test(String(value)))
        throw new Error(`${this.name}: ${where} header ${name} (${String(value)}) does not match ${pattern}`);
    }
    const content = response.content as Json | undefined;
    const type = mediaType(r.headers['content-type']);
    if (!content) {
      if (r.hasBody) throw new Error(`${this.name}: ${where} documents no body, the server sent one (${type || 'no content type'})`);
      return op.key;
    }
    if (!r.hasBody && status === '204') return op.key;
    // Media types compare without their parameters (`text/plain; version=0.0.4` is text/plain).
    const declared = Object.keys(content).find((k) => mediaType(k) === type);
    if (!declared) throw new Error(`${this.name}: ${where} answered ${type || 'no content type'}, the document declares ${Object.keys(content).join(', ')}`);
    if (type !== 'application/json' && !type.endsWith('+json')) return op.key;
    const validate = this.validator(`${at}/content/${pointer([declared, 'schema'])}`);
    if (!validate(r.body)) {
      const errors = describe(ofTheBranch(validate.errors ?? [])).slice(0, 5);
      throw new Error(`${this.name}: the ${where} body breaks the document:\n  ${errors.join('\n  ')}\nbody: ${JSON.stringify(r.body).slice(0, 600)}`);
    }
    return op.key;
  }
}
