// Who may do what: the roles a person or an API key is granted, for the whole tenant or for named
// agents, and the one permission each operation needs (declared beside its route, in its
// resource's file). The server enforces them in one middleware (server/src/http/auth.ts); the
// OpenAPI document shows them per operation; docs/people.md's table is generated from them.
import { z } from 'zod';
import { Slug } from './common.js';

export const Role = z
  .enum(['owner', 'builder', 'releaser', 'reviewer', 'operator', 'viewer', 'client'])
  .describe(
    'owner: everything, people, keys, secrets, channels, privacy and erasure included; builder: agents and drafts, knowledge, tests, evaluations and replays, the review inbox; releaser: activate (roll back, force with a reason), splits and promotion; reviewer: the review inbox and its actions into drafts; operator: conversations (reply, hand back, close); viewer: read only; client: a machine that talks to agents as their users do (converse, run tests), reading nothing',
  );
export type Role = z.infer<typeof Role>;

/** What an operation needs; every role's permissions are in ROLE_PERMISSIONS. */
export const Permission = z.enum([
  'read',
  'converse',
  'tests.run',
  'agents.write',
  'knowledge.write',
  'releases.write',
  'review.act',
  'conversations.reply',
  'conversations.erase',
  'channels.manage',
  'privacy.manage',
  'keys.manage',
  'secrets.manage',
  'people.manage',
  'self',
]);
export type Permission = z.infer<typeof Permission>;

/** What each permission allows, in the words the OpenAPI document and docs/people.md use. */
export const PERMISSION_MEANING: Record<Permission, string> = {
  read: 'read agents, versions, conversations, audit, analytics, the review inbox, evaluations, releases, channels, knowledge, usage',
  converse: "send a user's message to an agent",
  'tests.run': "run an agent's tests against a version",
  'agents.write': 'store, delete and draft agents; test suites, evaluations, replays; converse with a chosen version',
  'knowledge.write': 'add, sync and delete knowledge sources',
  'releases.write': 'activate a version (roll back, force with a reason), start, end and promote a split',
  'review.act': 'act on the review inbox (into a draft)',
  'conversations.reply': 'reply as a person, hand a conversation back, close it',
  'conversations.erase': "erase a conversation or a user's conversations",
  'channels.manage': 'connect, change and remove channels',
  'privacy.manage': "set and clear the tenant's privacy policy",
  'keys.manage': 'create, list and revoke API keys',
  'secrets.manage': 'store, list and delete secrets',
  'people.manage': 'list people, grant and remove their roles, end their sessions',
  self: 'see who the caller is and what they may do (GET /api/v1/me)',
};

const ALL = Permission.options;

/** Each role's permissions. A role never implies another: a grant names each role it gives. */
export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: ALL,
  builder: ['read', 'converse', 'tests.run', 'agents.write', 'knowledge.write', 'review.act', 'self'],
  releaser: ['read', 'tests.run', 'releases.write', 'self'],
  reviewer: ['read', 'review.act', 'self'],
  operator: ['read', 'conversations.reply', 'self'],
  viewer: ['read', 'self'],
  client: ['converse', 'tests.run', 'self'],
};

/** A role, for the whole tenant or (with `agents`) for those agents' operations only. */
export const Grant = z
  .object({
    role: Role,
    agents: z.array(Slug).min(1).max(50).optional().describe("Only these agents' operations (those under /agents/{slug}); omitted: the whole tenant"),
  })
  .strict();
export type Grant = z.infer<typeof Grant>;

export const Grants = z.array(Grant).min(1).max(20);

/**
 * Whether `grants` give `permission` on `slug` (an operation under /agents/{slug}), or tenant-wide
 * (no slug). A grant for named agents never reaches a tenant-wide operation.
 */
export function allows(grants: readonly Grant[], permission: Permission, slug?: string): boolean {
  return grants.some((g) => ROLE_PERMISSIONS[g.role].includes(permission) && (!g.agents || (slug !== undefined && g.agents.includes(slug))));
}

/** The agents `grants` give `permission` on: 'all' for a tenant-wide grant, else their slugs. */
export function agentsAllowed(grants: readonly Grant[], permission: Permission): 'all' | string[] {
  const out = new Set<string>();
  for (const g of grants) {
    if (!ROLE_PERMISSIONS[g.role].includes(permission)) continue;
    if (!g.agents) return 'all';
    for (const a of g.agents) out.add(a);
  }
  return [...out].sort();
}

/** `role` or `role:slug,slug`, as the command line and OIDC_GROUP_ROLES write a grant; null when it is not one. */
export function grantFrom(text: string): Grant | null {
  const at = text.indexOf(':');
  const parsed = Grant.safeParse(
    at < 0
      ? { role: text.trim() }
      : {
          role: text.slice(0, at).trim(),
          agents: text
            .slice(at + 1)
            .split(',')
            .map((a) => a.trim()),
        },
  );
  return parsed.success ? parsed.data : null;
}

/** A grant as `grantFrom` reads it. */
export const grantText = (g: Grant): string => (g.agents ? `${g.role}:${g.agents.join(',')}` : g.role);

/** Grants stored as JSON text (at most 20); text that fails their schema (a corrupted row) grants nothing. */
export function storedGrants(json: string): Grant[] {
  try {
    const parsed = Grant.array().max(20).safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** What API keys held before roles; each stands for a role (SCOPE_ROLES). */
export const Scope = z.enum(['converse', 'read', 'admin']);
export type Scope = z.infer<typeof Scope>;

/** The roles an API key's scopes (converse, read, admin) stand for. */
export const SCOPE_ROLES = { converse: 'client', read: 'viewer', admin: 'owner' } as const satisfies Record<Scope, Role>;
