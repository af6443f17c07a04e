// Builds the OpenAPI 3.1 document from the contract (served at /openapi.json, committed as
// openapi.json): @ts-rest/open-api generates the operations; this module then names the shared
// schemas, parameters and responses as components (so generators produce a `Conversation` type
// and the document stays small), gives every parameter an example, declares the headers every
// response carries, declares the security schemes each operation needs, tags operations by resource, and
// states the version, licence and servers.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAppRouteOtherResponse, type AppRoute } from '@ts-rest/core';
import { generateOpenApi } from '@ts-rest/open-api';
import { ZodType, type ZodTypeAny } from 'zod';
import * as c from '@switchboard/contract';

// The generated document is untyped JSON that this module reshapes: objects are read through
// `obj`, `arr` and `str`, which answer an empty value for anything of another shape.
type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObj(v) ? v : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

// The schema generator @ts-rest/open-api itself uses, so that a named schema's JSON is exactly
// what the generated operations contain.
const requireFromTsRest = createRequire(createRequire(import.meta.url).resolve('@ts-rest/open-api'));
const { generateSchema } = requireFromTsRest('@anatine/zod-openapi') as { generateSchema: (z: ZodTypeAny, useOutput?: boolean) => Json };

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string; license: string };

/**
 * Schemas that become components, each as the JSON it answers with and, where it differs, the
 * JSON it accepts (`…Input`): every schema the contract exports that describes an object (or a
 * union of objects), named by its export (a definition part's name without its `Def`, unless
 * another export has that name). Query,
 * header and path-parameter schemas become parameters instead. Where two exports have one shape,
 * the first in the contract's export order names it. Generated once per process, on first use.
 */
let namedForms: (readonly [string, Json])[] | undefined;
function named(): (readonly [string, Json])[] {
  namedForms ??= Object.entries(c)
    .filter(([name, v]) => /^[A-Z]/.test(name) && v instanceof ZodType && !/(Query|Headers|Params)$/.test(name))
    .flatMap(([exported, v]) => {
      const z = v as ZodTypeAny;
      // `OptionDef` keeps its suffix: `Option` is the reply's option, exported under that name.
      const bare = exported.replace(/Def$/, '');
      const name = bare !== exported && bare in c ? exported : bare;
      const output = to31(generateSchema(z, true)) as Json;
      if (!describesObjects(output)) return [];
      const input = to31(generateSchema(z, false)) as Json;
      return canonical(output) === canonical(input) ? [[name, output] as const] : [[name, output] as const, [`${name}Input`, input] as const];
    });
  return namedForms;
}

/** Whether a generated schema is an object or a union of objects (what deserves a name). */
function describesObjects(s: Json): boolean {
  if (s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'))) return true;
  const branches = arr(s.anyOf ?? s.oneOf);
  return branches.length > 0 && branches.every((b) => obj(b).type === 'null' || describesObjects(obj(b)));
}

/** Each operation's resource (contract/src/resources/): its tag is the resource's. */
const resourceOf = new Map<string, { tag: string }>(Object.values(c.RESOURCES).flatMap((r) => Object.keys(r.routes).map((name) => [name, r] as const)));
const routeName = new Map<AppRoute, string>(
  (['api', 'ops', 'widget', 'auth'] as const).flatMap((part) => Object.entries(c.contract[part]).map(([k, r]) => [r as AppRoute, k] as const)),
);
const permissions = c.routePermissions as Partial<Record<string, c.Permission>>;
/** The roles that hold each permission, as the OpenAPI document lists them. */
const holders = (p: c.Permission) => (Object.keys(c.ROLE_PERMISSIONS) as c.Role[]).filter((r) => c.ROLE_PERMISSIONS[r].includes(p));

/** OpenAPI 3.0 `nullable` → 3.1 (a `null` type), everywhere in a schema tree. */
function to31(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(to31);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = to31(v);
  if (out.nullable === true) {
    delete out.nullable;
    // A nullable enum is one of its values or null: an enum that listed null beside a type array
    // would be right too, but generators (openapi-zod-client) then put null among the enum's strings.
    if (Array.isArray(out.enum)) {
      const { description, ...rest } = out;
      return { ...(description ? { description } : {}), anyOf: [rest, { type: 'null' }] };
    }
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (Array.isArray(out.type)) out.type = [...new Set([...(out.type as unknown[]), 'null'])];
    else {
      const { description, ...rest } = out;
      // Any value already includes null.
      if (!Object.keys(rest).length) return description ? { description } : {};
      return { ...(description ? { description } : {}), anyOf: [rest, { type: 'null' }] };
    }
  } else if (out.nullable === false) delete out.nullable;
  // A one-branch composition is the branch itself.
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const branches = out[key];
    if (Array.isArray(branches) && branches.length === 1 && Object.keys(out).length === 1) return branches[0] as unknown;
  }
  return out;
}

const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (isObj(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
const withoutDescription = (s: Json): Json => {
  const { description: _d, ...rest } = s;
  return rest;
};

/** Replaces, bottom-up, every subtree equal to a named schema (its own description aside) by a $ref. */
function nameSchemas(doc: Json): Json {
  const components: Record<string, Json> = {};
  const byShape = new Map<string, string>();
  const replace = (node: unknown, self?: string): unknown => {
    if (Array.isArray(node)) return node.map((n) => replace(n));
    if (!node || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) out[k] = k === 'examples' || k === 'example' ? v : replace(v);
    const name = byShape.get(canonical(withoutDescription(out)));
    if (name && name !== self) {
      const ref: Json = { $ref: `#/components/schemas/${name}` };
      if (out.description && out.description !== components[name].description) ref.description = out.description;
      return ref;
    }
    return out;
  };
  // Smaller schemas first, so that larger ones refer to them.
  const forms = [...named()].sort((a, b) => JSON.stringify(a[1]).length - JSON.stringify(b[1]).length);
  for (const [name, schema] of forms) {
    const named = replace(schema, name) as Json;
    components[name] = named;
    const key = canonical(withoutDescription(named));
    if (!byShape.has(key)) byShape.set(key, name);
  }
  const paths = replace(doc.paths) as Json;
  // Only the components something refers to (directly or through another component).
  const used = new Set<string>();
  const visit = (v: unknown) => {
    if (Array.isArray(v)) {
      v.forEach(visit);
      return;
    }
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') {
        const n = x.split('/').pop()!;
        if (!used.has(n)) {
          used.add(n);
          visit(components[n]);
        }
      } else visit(x);
    }
  };
  visit(paths);
  return {
    ...doc,
    paths,
    components: {
      ...obj(doc.components),
      schemas: Object.fromEntries(
        Object.entries(components)
          .filter(([n]) => used.has(n))
          .sort(([a], [b]) => (a < b ? -1 : 1)),
      ),
    },
  };
}

/** Per operation: tags, security, descriptions lifted where readers look, and other content types. */
function mapOperation(op: Json, route: AppRoute): Json {
  const name = routeName.get(route) ?? '';
  const permission = permissions[name];
  // Every operation belongs to a resource; one that does not is a mistake, not "Operations".
  const resource = resourceOf.get(name);
  if (!resource) throw new Error(`openapi: operation ${name} belongs to no resource of contract/src/resources/`);
  op.tags = [resource.tag];
  // Tenant header, or an API key that names its tenant (with a role that holds the permission): as the server runs.
  op.security = permission ? [{ tenantHeader: [] }, { apiKey: [] }, { session: [] }] : [];
  if (permission) {
    op['x-permission'] = permission;
    op['x-roles'] = holders(permission);
  }
  if (!op.description) op.description = permission ? `${route.summary ?? name}.` : route.summary;
  if (permission) {
    const reach = route.path.includes(':slug')
      ? ', for the whole tenant or this agent'
      : c.agentGrantRoutes.has(name)
        ? '; a grant for named agents reaches it too'
        : ', for the whole tenant';
    op.description = `${String(op.description)}\n\nPermission: \`${permission}\` (roles: ${holders(permission).join(', ')})${reach}.`;
  }
  const responses = obj(op.responses);
  op.responses = responses;
  // Responses of another content type (server-sent events) are left out by the generator.
  for (const [status, r] of Object.entries(route.responses)) {
    if (isAppRouteOtherResponse(r)) {
      responses[status] = {
        description: (r.body as { description?: string }).description ?? status,
        content: { [r.contentType]: { schema: { type: 'string' } } },
      };
    }
  }
  for (const p of arr(op.parameters).map(obj)) {
    const schema = obj(p.schema);
    if (!p.description && schema.description) {
      p.description = schema.description;
      delete schema.description;
    }
  }
  // The tenant-id header is described by the security scheme; a key names the tenant without it.
  const parameters = arr(op.parameters).filter((p) => !(obj(p).in === 'header' && ['tenant-id', 'authorization'].includes(str(obj(p).name) ?? '')));
  if (parameters.length) op.parameters = parameters;
  else delete op.parameters;
  // Responses without a body (204) have no schema to carry a description.
  for (const [status, response] of Object.entries(responses)) {
    const r = obj(response);
    if (r.description !== status) continue;
    if (status === '204') r.description = 'Done; no body';
    if (status === '302') {
      r.description = 'A redirect: the browser goes on to `location`';
      r.headers = { location: { description: 'Where the browser goes next', schema: { type: 'string' } } };
    }
    const described = Object.values(obj(r.content))
      .map((x) => obj(obj(x).schema).description)
      .find((d) => d);
    if (described) r.description = described;
  }
  if (!permission)
    responses['4XX'] ??= {
      description: 'Any other client error, as problem details',
      content: { 'application/problem+json': { schema: generateSchema(c.Problem, true) } },
    };
  // Problems are served as application/problem+json.
  for (const [status, response] of Object.entries(responses)) {
    const r = obj(response);
    const json = obj(r.content)['application/json'];
    if (Number(status[0]) >= 4 && json) r.content = { 'application/problem+json': json };
  }
  const body = obj(op.requestBody);
  const content = obj(body.content);
  const json = content['application/json'];
  if (name === 'putAgent' && json) {
    body.description = 'An agent definition, as JSON or YAML';
    content['application/yaml'] = { schema: obj(json).schema };
  }
  if (name === 'converse' && json) {
    // One status, two content types: ts-rest has one body per status, so the stream is added here.
    obj(obj(responses['200']).content)['text/event-stream'] = {
      schema: {
        type: 'string',
        description:
          'With `accept: text/event-stream`: server-sent events, `delta` (`{"text": "…"}`) as the reply is written, then `done` with the ConverseResponse, or `error` with a problem document',
      },
    };
    body.description = 'A message; without conversation_id it starts a conversation';
  }
  return op;
}

/** The error responses every /api/v1 operation shares, as response components. */
const SHARED_RESPONSES: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '429': 'TooManyRequests',
  '500': 'InternalError',
  '503': 'Unavailable',
};

/** Every operation of the document, as objects that can be changed in place. */
const operations = (doc: Json): Json[] => Object.values(obj(doc.paths)).flatMap((item) => Object.values(obj(item)).map(obj));

/** The operations under paths that start with `prefix`. */
const operationsUnder = (doc: Json, prefix: string): Json[] =>
  Object.entries(obj(doc.paths))
    .filter(([path]) => path.startsWith(prefix))
    .flatMap(([, item]) => Object.values(obj(item)).map(obj));

function shareResponses(doc: Json): Json {
  const responses: Record<string, unknown> = {};
  // For the API's operations and the widget's, the most common form of each shared status becomes
  // a component (the widget's named Widget…); operations with exactly it refer to it.
  for (const [prefix, namePrefix] of [
    ['/api/', ''],
    ['/widget/', 'Widget'],
  ] as const) {
    const ops = operationsUnder(doc, prefix);
    for (const [status, shared] of Object.entries(SHARED_RESPONSES)) {
      const name = `${namePrefix}${shared}`;
      const counts = new Map<string, { n: number; r: unknown }>();
      for (const op of ops) {
        const r = obj(op.responses)[status];
        if (!r) continue;
        const k = canonical(r);
        counts.set(k, { n: (counts.get(k)?.n ?? 0) + 1, r });
      }
      const best = [...counts.values()].sort((a, b) => b.n - a.n).at(0);
      if (!best || best.n < 2) continue;
      responses[name] = best.r;
      const key = canonical(best.r);
      for (const op of ops) {
        const rs = obj(op.responses);
        if (rs[status] && canonical(rs[status]) === key) rs[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  return { ...doc, components: { ...obj(doc.components), responses } };
}

/**
 * A discriminator without a mapping names its branches by schema name (OpenAPI 3.1, 4.8.25), so
 * generators type `type` as "RoutingDecisionEntry". Every discriminated union gets the mapping from
 * each branch's own single value of the property.
 */
function mapDiscriminators(doc: Json): Json {
  const schemas = obj(obj(doc.components).schemas);
  const valueOf = (ref: string, property: string): string => {
    const branch = obj(schemas[ref.split('/').pop()!]);
    const values = arr(obj(obj(branch.properties)[property]).enum);
    if (values.length !== 1 || typeof values[0] !== 'string') throw new Error(`${ref}: the discriminator ${property} must have one string value`);
    return values[0];
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(visit);
      return;
    }
    if (!isObj(node)) return;
    const discriminator = node.discriminator;
    if (isObj(discriminator) && !discriminator.mapping) {
      const property = str(discriminator.propertyName) ?? '';
      const refs = arr(node.oneOf ?? node.anyOf).map((b) => str(obj(b).$ref));
      if (refs.some((r) => !r)) throw new Error(`a discriminated union on ${property} has a branch that is not a named schema`);
      discriminator.mapping = Object.fromEntries(refs.map((r) => [valueOf(r!, property), r!]));
    }
    Object.values(node).forEach(visit);
  };
  visit(doc);
  return doc;
}

const exampleRefs = (names: readonly string[]) => Object.fromEntries(names.map((n) => [n, { $ref: `#/components/examples/${n}` }]));

/**
 * Examples (each resource's, contract/src/resources/) for each operation's request body, success response and
 * usual problems, as references to components/examples. A problem's examples go on the shared
 * response component when the operation uses one, so operations keep sharing it.
 */
function addExamples(doc: Json): Json {
  const used = new Set<string>();
  const responses = obj(obj(doc.components).responses);
  const media = (r: Json): Json[] => Object.values(obj(r.content)).map(obj);
  const add = (content: Json, names: readonly string[] | undefined) => {
    if (!names?.length) return;
    content.examples = { ...obj(content.examples), ...exampleRefs(names) };
    names.forEach((n) => used.add(n));
  };
  for (const op of operations(doc)) {
    const spec = c.OPERATION_EXAMPLES[str(op.operationId) ?? ''] as (typeof c.OPERATION_EXAMPLES)[string] | undefined;
    if (!spec) throw new Error(`contract/src/resources/ has no examples for the operation ${String(op.operationId)}`);
    const content = obj(obj(op.requestBody).content);
    const body = obj(content['application/json'] ?? content['multipart/form-data']);
    if (spec.request) add(body, spec.request);
    const opResponses = obj(op.responses);
    const success = Object.keys(opResponses).find((k) => k.startsWith('2'));
    const successMedia = success ? media(obj(opResponses[success])) : [];
    if (successMedia.length) add(successMedia[0], spec.response);
    for (const [status, names] of Object.entries(spec.problems ?? {})) {
      const r = obj(opResponses[status]);
      const ref = str(r.$ref);
      for (const m of media(ref ? obj(responses[ref.split('/').pop()!]) : r)) add(m, names);
    }
  }
  const examples = Object.fromEntries([...used].sort().map((n) => [n, c.EXAMPLES[n as c.ExampleName]]));
  return { ...doc, components: { ...obj(doc.components), examples } };
}

/** Component names clearer than the parameter's own. */
const PARAMETER_NAMES: Record<string, string> = { 'path:id': 'ConversationId', 'path:name': 'SecretName', 'query:key': 'PublishableKey' };

const pascal = (s: string) => s.replace(/(^|[-_])([a-z0-9])/g, (_m, _sep: string, ch: string) => ch.toUpperCase());

/**
 * Parameters: each gets its example (contract/src/examples/parameters.ts), and every parameter that two
 * operations or more share word for word becomes a component they refer to, named after it
 * (`Slug`, `XRequestId`, `ConversationId`; `LimitQuery`… where the name is taken).
 */
function shareParameters(doc: Json): Json {
  for (const op of operations(doc)) {
    for (const p of arr(op.parameters).map(obj)) {
      const key = `${str(p.in)}:${str(p.name)}`;
      const example = c.PARAMETER_EXAMPLES[`${str(op.operationId)} ${key}`] ?? c.PARAMETER_EXAMPLES[key];
      if (example !== undefined) p.example = example;
      if (p.name === 'x-request-id' && !p.description) p.description = 'Trace id; echoed back, generated when absent';
    }
  }
  const counts = new Map<string, { n: number; p: Json }>();
  for (const op of operations(doc))
    for (const p of arr(op.parameters).map(obj)) {
      const k = canonical(p);
      counts.set(k, { n: (counts.get(k)?.n ?? 0) + 1, p });
    }
  const parameters: Record<string, Json> = {};
  const nameOf = new Map<string, string>();
  for (const [k, { n, p }] of [...counts].sort((a, b) => b[1].n - a[1].n)) {
    if (n < 2) continue;
    const base = PARAMETER_NAMES[`${str(p.in)}:${str(p.name)}`] ?? pascal(str(p.name) ?? 'Parameter');
    let name = base in parameters ? `${base}${pascal(str(p.in) ?? '')}` : base;
    for (let i = 2; name in parameters; i++) name = `${base}${i}`;
    parameters[name] = p;
    nameOf.set(k, name);
  }
  for (const op of operations(doc)) {
    if (!op.parameters) continue;
    op.parameters = arr(op.parameters).map((p) => {
      const name = nameOf.get(canonical(p));
      return name ? { $ref: `#/components/parameters/${name}` } : p;
    });
  }
  return { ...doc, components: { ...obj(doc.components), parameters } };
}

/** Headers every response carries, and those of 429 and 503, as header components. */
const RESPONSE_HEADERS: Record<string, Json> = {
  RequestId: {
    description: "The request's trace id: the caller's x-request-id when it was a sane token, else a fresh one",
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9._:/+=-]{1,200}$' },
  },
  RetryAfter: { description: 'Seconds to wait before trying again', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
};

function declareHeaders(doc: Json): Json {
  const statusOf = new Map(Object.entries(SHARED_RESPONSES).flatMap(([status, name]) => [[name, status] as const, [`Widget${name}`, status] as const]));
  const all = [
    ...operations(doc).flatMap((op) => Object.entries(obj(op.responses))),
    ...Object.entries(obj(obj(doc.components).responses)).map(([name, r]) => [statusOf.get(name) ?? name, r] as const),
  ];
  for (const [status, response] of all) {
    const r = obj(response);
    if (r.$ref) continue;
    r.headers = {
      ...obj(r.headers),
      'x-request-id': { $ref: '#/components/headers/RequestId' },
      ...(status === '429' || status === '503' ? { 'retry-after': { $ref: '#/components/headers/RetryAfter' } } : {}),
    };
  }
  return { ...doc, components: { ...obj(doc.components), headers: RESPONSE_HEADERS } };
}

export function getOpenApi(): Record<string, unknown> {
  const generated = generateOpenApi(
    c.contract,
    {
      info: {
        title: 'Switchboard',
        version: pkg.version,
        description:
          'Multi-tenant service that hosts conversational agents. Every /api/v1 call names its tenant with the `tenant-id` header, or (AUTH_MODE=api_key) with an API key that names it. Errors are RFC 9457 problem details (application/problem+json). The web console is at [/console](/console); the web chat widget at /widget/v1.js (docs/widget.md).',
        license: { name: pkg.license, identifier: pkg.license },
        contact: { name: 'Switchboard maintainers' },
      },
    },
    { setOperationId: true, operationMapper: (op, route) => mapOperation(op, route) as typeof op },
  ) as Json;
  const doc = declareHeaders(shareParameters(mapDiscriminators(addExamples(shareResponses(nameSchemas(to31(generated) as Json))))));
  return {
    openapi: '3.1.0',
    info: doc.info,
    servers: [{ url: 'http://127.0.0.1:3000', description: 'A local server (npm start)' }],
    tags: Object.values(c.RESOURCES).map(({ tag, description }) => ({ name: tag, description })),
    paths: doc.paths,
    components: {
      schemas: obj(doc.components).schemas,
      responses: obj(doc.components).responses,
      parameters: obj(doc.components).parameters,
      headers: obj(doc.components).headers,
      examples: obj(doc.components).examples,
      securitySchemes: {
        tenantHeader: { type: 'apiKey', in: 'header', name: 'tenant-id', description: 'AUTH_MODE=header: the tenant, trusted from a gateway in front' },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'AUTH_MODE=api_key: `authorization: Bearer sbk_…`; the key names its tenant and holds roles (docs/people.md)',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'sb_session',
          description:
            "A person signed in with the tenant's OpenID provider (GET /auth/login; docs/people.md): the session names its tenant and its person's roles; requests that change something carry `x-csrf-token`",
        },
      },
    },
  };
}
