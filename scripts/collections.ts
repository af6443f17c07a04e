// The collections REST-client users open first, written by `npm run openapi` beside openapi.json
// (a test fails when the committed ones differ): collections/switchboard.postman_collection.json,
// converted from openapi.json by Postman's own converter (openapi-to-postmanv2), with the README's
// conversation as its first folder, whose requests pass the conversation and replay ids on;
// collections/switchboard.postman_environment.json for `npm start`; and the same conversation as
// .http files: switchboard.http (JetBrains HTTP Client, httpyac) and switchboard.rest-client.http
// (VS Code's REST Client, which has request variables where the others have response handlers).
import Converter from 'openapi-to-postmanv2';
import stringify from 'json-stringify-pretty-compact';
import { EXAMPLES, PARAMETER_EXAMPLES } from '@switchboard/contract';

export const COLLECTIONS_DIR = new URL('../collections/', import.meta.url);
export const COLLECTION_FILES = {
  collection: 'switchboard.postman_collection.json',
  environment: 'switchboard.postman_environment.json',
  http: 'switchboard.http',
  restClient: 'switchboard.rest-client.http',
} as const;

type Json = Record<string, unknown>;
interface Variable {
  key: string;
  value: unknown;
  [k: string]: unknown;
}
interface Request {
  method: string;
  url: { path: string[]; query?: Variable[]; variable?: Variable[]; host?: string[] };
  header?: Variable[];
  body?: { mode: string; raw?: string; [k: string]: unknown };
  [k: string]: unknown;
}
interface Item {
  id?: string;
  name: string;
  request?: Request;
  response?: { code?: number; id?: string; [k: string]: unknown }[];
  item?: Item[];
  event?: unknown[];
  [k: string]: unknown;
}

/** Names of the parameters that have an example. */
const EXAMPLED = new Set(Object.keys(PARAMETER_EXAMPLES).map((k) => k.split(' ').at(-1)!.split(':')[1]));
const CONVERSATION = String(PARAMETER_EXAMPLES['path:id']);
const REPLAY = String(PARAMETER_EXAMPLES['getReplay path:id']);
const EVALUATION = String(PARAMETER_EXAMPLES['getEvaluation path:id']);

function convert(doc: Json): Promise<Json> {
  return new Promise((resolve, reject) => {
    Converter.convertV2(
      { type: 'json', data: doc },
      // Folders by tag; parameters and bodies from the document's examples; optional parameters
      // listed but not sent.
      { folderStrategy: 'Tags', parametersResolution: 'Example', enableOptionalParameters: false },
      (err, r) => {
        if (err) reject(new Error(`openapi-to-postmanv2: ${err.message}`));
        else if (!r?.result || !r.output?.[0]) reject(new Error(`openapi-to-postmanv2 could not convert openapi.json: ${r?.reason ?? 'no reason given'}`));
        else resolve(r.output[0].data as Json);
      },
    );
  });
}

const items = (list: Item[]): Item[] => list.flatMap((i) => (i.item ? items(i.item) : [i]));

/** A Postman test script, line by line. */
const tests = (...exec: string[]) => [{ listen: 'test', script: { type: 'text/javascript', exec } }];

/** A copy of the converted request for `METHOD /path/{param}`, renamed, with its body and path variables as given. */
function requestOf(
  all: Item[],
  method: string,
  path: string,
  o: { name: string; body?: unknown; variables?: Record<string, string>; query?: Record<string, string> },
): Item {
  const segments = path
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/^\{(.+)\}$/, ':$1'));
  const found = all.find((i) => i.request?.method === method && i.request.url.path.join('/') === segments.join('/'));
  if (!found?.request) throw new Error(`the converted collection has no ${method} ${path}`);
  const request = structuredClone(found.request);
  for (const v of request.url.variable ?? []) if (o.variables?.[v.key] !== undefined) v.value = o.variables[v.key];
  if (o.query) request.url.query = Object.entries(o.query).map(([key, value]) => ({ key, value }));
  if (o.body !== undefined) request.body = { mode: 'raw', raw: JSON.stringify(o.body, null, 2), options: { raw: { language: 'json' } } };
  return { name: o.name, request, response: [] };
}

/** The README's conversation, as requests that run in order and check what they answer. */
function readmeFolder(all: Item[]): Item {
  const slug = String(PARAMETER_EXAMPLES['path:slug']);
  const start = EXAMPLES.ConverseStart.value;
  const conversation = { slug, id: '{{conversation_id}}' };
  return {
    name: "The README's conversation",
    description: 'Run in order (the collection runner, or newman): each request passes the conversation id on.',
    item: [
      {
        ...requestOf(all, 'POST', '/api/v1/agents/{slug}/converse', { name: 'Ask where the order is', body: start, variables: { slug } }),
        event: tests(
          "pm.test('answers 200 and asks for the order number', () => {",
          '  pm.response.to.have.status(200);',
          "  pm.expect(pm.response.json().response.phase).to.eql('ask_order');",
          '});',
          "pm.collectionVariables.set('conversation_id', pm.response.json().conversation_id);",
        ),
      },
      {
        ...requestOf(all, 'POST', '/api/v1/agents/{slug}/converse', {
          name: 'Give the order number',
          body: { message: '100001', conversation_id: '{{conversation_id}}' },
          variables: { slug },
        }),
        event: tests(
          "pm.test('completes the conversation with the order status', () => {",
          '  pm.response.to.have.status(200);',
          "  pm.expect(pm.response.json().state.status).to.eql('completed');",
          '  pm.expect(pm.response.json().response.message).to.match(/^Order 100001 /);',
          '});',
        ),
      },
      {
        ...requestOf(all, 'GET', '/api/v1/agents/{slug}/conversations/{id}/history', { name: 'Read its history', variables: conversation }),
        event: tests("pm.test('has four turns', () => pm.expect(pm.response.json().turns).to.have.length(4));"),
      },
      {
        ...requestOf(all, 'GET', '/api/v1/agents/{slug}/conversations/{id}/audit-logs', { name: 'Read its audit log', variables: conversation }),
        event: tests("pm.test('records the routing decision', () => pm.expect(pm.response.json().data.map((e) => e.type)).to.include('routing_decision'));"),
      },
      {
        ...requestOf(all, 'GET', '/api/v1/agents/{slug}/conversations', {
          name: 'List completed conversations',
          variables: { slug },
          query: { status: 'completed', limit: '10' },
        }),
        event: tests("pm.test('answers 200', () => pm.response.to.have.status(200));"),
      },
      {
        ...requestOf(all, 'POST', '/api/v1/agents/{slug}/replays', {
          name: 'Replay it against version 1',
          body: { version: 1, conversations: ['{{conversation_id}}'] },
          variables: { slug },
        }),
        event: tests("pm.test('starts the replay', () => pm.response.to.have.status(202));", "pm.collectionVariables.set('replay_id', pm.response.json().id);"),
      },
      {
        ...requestOf(all, 'GET', '/api/v1/agents/{slug}/replays/{id}', { name: 'Read the replay', variables: { slug, id: '{{replay_id}}' } }),
        event: tests("pm.test('answers 200', () => pm.response.to.have.status(200));"),
      },
      {
        ...requestOf(all, 'POST', '/api/v1/agents/{slug}/versions/{version}/evaluations', {
          name: 'Evaluate version 1',
          body: { replay: 0, folds: 2 },
          variables: { slug, version: '1' },
        }),
        event: tests(
          "pm.test('starts the evaluation', () => pm.response.to.have.status(202));",
          "pm.collectionVariables.set('evaluation_id', pm.response.json().id);",
        ),
      },
      {
        ...requestOf(all, 'GET', '/api/v1/agents/{slug}/evaluations/{id}', { name: 'Read the evaluation', variables: { slug, id: '{{evaluation_id}}' } }),
        event: tests("pm.test('answers 200', () => pm.response.to.have.status(200));"),
      },
    ],
  };
}

/**
 * A multipart request's fields as its operation's request example gives them (the converter
 * makes values up from the schema): text fields with the example's values, the file field as a
 * file part for the user to choose.
 */
function formFromExample(req: Request, doc: Json): void {
  if (req.body?.mode !== 'formdata') return;
  const path = `/${req.url.path.map((s) => s.replace(/^:(.+)$/, '{$1}')).join('/')}`;
  const op = ((doc.paths as Record<string, Record<string, Json>>)[path] ?? {})[req.method.toLowerCase()];
  const content = ((op?.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.['multipart/form-data'];
  const ref = Object.values((content?.examples ?? {}) as Record<string, { $ref: string }>)[0]?.$ref;
  const example = ref ? ((doc.components as Json).examples as Record<string, { value: Record<string, unknown> }>)[ref.split('/').pop()!]?.value : undefined;
  if (!example) throw new Error(`${req.method} ${path} takes multipart/form-data but has no request example`);
  const fields = req.body.formdata as Variable[];
  req.body.formdata = fields.flatMap((f): Variable[] => {
    const value = example[f.key];
    if (value === undefined) return [];
    if (f.key === 'file') return [{ key: f.key, type: 'file', src: '', value: null, description: f.description }];
    return [{ ...f, value: String(value) }];
  });
}

/**
 * The collection: the README's conversation, then every operation by tag. Path variables that
 * name the conversation, the replay or the evaluation read the collection's variables (the README's, which
 * `npm start` holds, until the first folder sets them). Random ids are left out and each request
 * keeps its success example, so the file is the same on every run.
 */
function collectionOf(converted: Json, doc: Json): Json {
  const folders = converted.item as Item[];
  const all = items(folders);
  for (const i of all) {
    delete i.id;
    for (const req of [i.request, ...(i.response ?? []).map((r) => r.originalRequest as Request | undefined)]) if (req) formFromExample(req, doc);
    i.response = (i.response ?? []).filter((r) => r.code !== undefined && r.code >= 200 && r.code < 300).slice(0, 1);
    for (const r of i.response) delete r.id;
    // Optional parameters without an example (a cursor, last-event-id, x-user-hash): listed, off, and empty rather than made up.
    for (const req of [i.request, ...i.response.map((r) => r.originalRequest as Request | undefined)])
      for (const v of [...(req?.url.query ?? []), ...(req?.header ?? [])]) if (v.disabled && !EXAMPLED.has(v.key)) v.value = '';
    for (const v of i.request?.url.variable ?? []) {
      if (v.key === 'id' && v.value === CONVERSATION) v.value = '{{conversation_id}}';
      if (v.key === 'id' && v.value === REPLAY) v.value = '{{replay_id}}';
      if (v.key === 'id' && v.value === EVALUATION) v.value = '{{evaluation_id}}';
    }
  }
  const strip = (list: Item[]) => {
    for (const f of list) {
      delete f.id;
      if (f.item) strip(f.item);
    }
  };
  strip(folders);
  const { _postman_id: _id, ...info } = converted.info as Json;
  return {
    info,
    item: [readmeFolder(all), ...folders],
    variable: [
      { key: 'baseUrl', value: 'http://127.0.0.1:3000' },
      { key: 'conversation_id', value: CONVERSATION },
      { key: 'replay_id', value: REPLAY },
      { key: 'evaluation_id', value: EVALUATION },
    ],
  };
}

const ENVIRONMENT = {
  name: 'Switchboard (npm start)',
  values: [
    { key: 'baseUrl', value: 'http://127.0.0.1:3000', type: 'default', enabled: true },
    { key: 'apiKey', value: 'demo', type: 'default', enabled: true, description: 'The tenant-id header (AUTH_MODE=header); the demo tenant is "demo"' },
  ],
};

/** The README's conversation as requests of an .http file, each with what passes the conversation id on. */
interface HttpStep {
  title: string;
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** The JetBrains/httpyac response handler: its assertions, and whether it keeps the conversation id. */
  check: string;
  keepsId?: boolean;
}

function httpSteps(id: string): HttpStep[] {
  return [
    {
      title: 'Ask where the order is',
      method: 'POST',
      path: '/converse',
      body: EXAMPLES.ConverseStart.value,
      check: 'response.body.response.phase === "ask_order"',
      keepsId: true,
    },
    {
      title: 'Give the order number',
      method: 'POST',
      path: '/converse',
      body: { message: '100001', conversation_id: id },
      check: 'response.body.state.status === "completed"',
    },
    { title: 'Read its history', method: 'GET', path: `/conversations/${id}/history`, check: 'response.body.turns.length === 4' },
    {
      title: 'Read its audit log',
      method: 'GET',
      path: `/conversations/${id}/audit-logs`,
      check: 'response.body.data.some((e) => e.type === "routing_decision")',
    },
    { title: 'List completed conversations', method: 'GET', path: '/conversations?status=completed&limit=10', check: 'response.status === 200' },
  ];
}

const httpRequest = (s: HttpStep, agent: string) => [
  `${s.method} ${agent}${s.path}`,
  'tenant-id: {{tenant}}',
  ...(s.body !== undefined ? ['content-type: application/json', '', JSON.stringify(s.body, null, 2)] : []),
];

/** An .http file of the README's conversation: its intro, the variables, then each step as `step` writes it. */
function httpDocument(intro: string[], id: string, step: (s: HttpStep, request: string[]) => string[]): string {
  const agent = `{{baseUrl}}/api/v1/agents/${String(PARAMETER_EXAMPLES['path:slug'])}`;
  return [
    ...intro,
    '@baseUrl = http://127.0.0.1:3000',
    '@tenant = demo',
    ...httpSteps(id).flatMap((s) => ['', `### ${s.title}`, ...step(s, httpRequest(s, agent))]),
    '',
  ].join('\n');
}

/**
 * For the JetBrains HTTP Client and httpyac (CLI and VS Code extension): response handler scripts
 * (`> {% … %}`) check each answer and keep the conversation id in a global variable.
 */
const httpFile = () =>
  httpDocument(
    [
      "# The README's conversation with the example agent, for the JetBrains HTTP Client and httpyac",
      '# (`npx httpyac send collections/switchboard.http --all`); VS Code REST Client: switchboard.rest-client.http.',
      '# Start the service with `npm start`.',
    ],
    '{{conversation_id}}',
    (s, request) => [
      ...request,
      '',
      '> {%',
      `  client.test(${JSON.stringify(s.title)}, () => client.assert(response.status < 300 && ${s.check}, "answered " + response.status));`,
      ...(s.keepsId ? ['  client.global.set("conversation_id", response.body.conversation_id);'] : []),
      '%}',
    ],
  );

/** For VS Code's REST Client: the first request is named, and the others read its id as a request variable. */
const restClientFile = () =>
  httpDocument(
    [
      "# The README's conversation with the example agent, for VS Code's REST Client",
      '# (JetBrains HTTP Client and httpyac: switchboard.http). Start the service with `npm start`.',
    ],
    '{{start.response.body.$.conversation_id}}',
    (s, request) => [...(s.keepsId ? ['# @name start'] : []), ...request],
  );

/** The files, by name, as text. */
export async function renderCollections(doc: Json): Promise<Record<string, string>> {
  const collection = collectionOf(await convert(doc), doc);
  return {
    [COLLECTION_FILES.collection]: `${stringify(collection, { maxLength: 120, indent: 2 })}\n`,
    [COLLECTION_FILES.environment]: `${stringify(ENVIRONMENT, { maxLength: 120, indent: 2 })}\n`,
    [COLLECTION_FILES.http]: httpFile(),
    [COLLECTION_FILES.restClient]: restClientFile(),
  };
}
