// The Switchboard HTTP contract: every endpoint, header, query, body and response, one resource
// per file in resources/. The server, the typed client and openapi.json are all derived from it.
import type { Permission } from './access.js';
import { initContract } from '@ts-rest/core';
import type { OperationExamples } from './resource.js';
import { problemExamples } from './examples/problems.js';
import { conversations } from './resources/conversations.js';
import { audit } from './resources/audit.js';
import { operators } from './resources/operators.js';
import { agents } from './resources/agents.js';
import { versions } from './resources/versions.js';
import { analytics } from './resources/analytics.js';
import { review } from './resources/review.js';
import { evaluations } from './resources/evaluations.js';
import { releases } from './resources/releases.js';
import { webhooks } from './resources/webhooks.js';
import { channels } from './resources/channels.js';
import { keys } from './resources/keys.js';
import { secrets } from './resources/secrets.js';
import { privacy } from './resources/privacy.js';
import { people } from './resources/people.js';
import { auth } from './resources/auth.js';
import { knowledge } from './resources/knowledge.js';
import { usage } from './resources/usage.js';
import { operations } from './resources/operations.js';
import { widget } from './resources/widget.js';

export * from './access.js';
export * from './agents.js';
export * from './common.js';
export * from './conversations.js';
export * from './converse.js';
export * from './definition.js';
export * from './keys.js';
export * from './secrets.js';
export * from './privacy.js';
export * from './people.js';
export * from './tests.js';
export * from './replays.js';
export * from './analytics.js';
export * from './review.js';
export * from './releases.js';
export * from './widget.js';
export * from './channels.js';
export * from './knowledge.js';
export * from './usage.js';
export { PARAMETER_EXAMPLES } from './examples/parameters.js';
/** The publishable key the widget examples use, which `npm start` holds under its id. */
export { WIDGET_KEY, WIDGET_KEY_ID } from './examples/fixtures.js';
export type { OpenApiExample } from './resource.js';

/**
 * Every resource by name, in the order the OpenAPI document lists their tags. A route's tag, permission
 * and examples are its resource's; the server's handlers are one module per resource too.
 */
export const RESOURCES: {
  conversations: typeof conversations;
  audit: typeof audit;
  operators: typeof operators;
  agents: typeof agents;
  versions: typeof versions;
  analytics: typeof analytics;
  review: typeof review;
  evaluations: typeof evaluations;
  releases: typeof releases;
  webhooks: typeof webhooks;
  channels: typeof channels;
  keys: typeof keys;
  secrets: typeof secrets;
  privacy: typeof privacy;
  people: typeof people;
  knowledge: typeof knowledge;
  usage: typeof usage;
  operations: typeof operations;
  widget: typeof widget;
  auth: typeof auth;
} = {
  conversations,
  audit,
  operators,
  agents,
  versions,
  analytics,
  review,
  evaluations,
  releases,
  webhooks,
  channels,
  keys,
  secrets,
  privacy,
  people,
  knowledge,
  usage,
  operations,
  widget,
  auth,
};
/** The resources under /api/v1, whose routes need a permission (access.ts). */
const API = [
  conversations,
  audit,
  operators,
  agents,
  versions,
  analytics,
  review,
  evaluations,
  releases,
  webhooks,
  channels,
  keys,
  secrets,
  privacy,
  people,
  knowledge,
  usage,
];

// Each part is typed by its resources' routes, each named: inferred, the whole contract's type is
// spelled out again and passes what TypeScript serializes into declarations (TS7056).
type ApiRoutes = typeof conversations.routes &
  typeof audit.routes &
  typeof operators.routes &
  typeof agents.routes &
  typeof versions.routes &
  typeof analytics.routes &
  typeof review.routes &
  typeof evaluations.routes &
  typeof releases.routes &
  typeof webhooks.routes &
  typeof channels.routes &
  typeof keys.routes &
  typeof secrets.routes &
  typeof privacy.routes &
  typeof people.routes &
  typeof knowledge.routes &
  typeof usage.routes;
/** Everything under /api/v1: one flat router, so a client calls `api.converse`, `api.listChannels`… */
export const apiContract: ApiRoutes = Object.assign({}, ...API.map((r) => r.routes)) as ApiRoutes;

/** The permission each route under /api/v1 needs (access.ts). */
export const routePermissions: Record<keyof ApiRoutes, Permission> = Object.assign({}, ...API.map((r) => r.permissions)) as Record<keyof ApiRoutes, Permission>;

/** The routes a grant for named agents reaches without a slug: the caller's identity, lists filtered to its agents. */
export const agentGrantRoutes: ReadonlySet<string> = new Set(API.flatMap((r) => ('agentGrantsReach' in r ? (r.agentGrantsReach as readonly string[]) : [])));

const c = initContract();

export const contract: { api: ApiRoutes; ops: typeof operations.routes; widget: typeof widget.routes; auth: typeof auth.routes } = c.router({
  api: apiContract,
  ops: operations.routes,
  widget: widget.routes,
  auth: auth.routes,
});
export type Contract = typeof contract;

type Resources = typeof RESOURCES;
/** The intersection of a union's members: every resource's examples in one type. */
type AllOf<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/** The parts merged into one record; a name two parts give is a mistake, refused at once. */
function merged(parts: Record<string, unknown>[], what: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of parts)
    for (const [name, value] of Object.entries(part)) {
      if (name in out) throw new Error(`Two resources give the ${what} "${name}"`);
      out[name] = value;
    }
  return out;
}

/** Every example by its name in components/examples: the shared problems' and each resource's. */
export const EXAMPLES = merged([problemExamples, ...Object.values(RESOURCES).map((r) => r.examples)], 'example') as typeof problemExamples &
  AllOf<Resources[keyof Resources]['examples']>;
export type ExampleName = keyof typeof EXAMPLES;

/** Per operation, its examples (each resource's); every name it gives is an example above. */
export const OPERATION_EXAMPLES = merged(
  Object.values(RESOURCES).map((r) => r.operations),
  'operation',
) as Record<string, OperationExamples<ExampleName>>;
