// People who sign in with the tenant's OpenID provider, their roles and sessions, and who a
// caller is (docs/people.md).
import { z } from 'zod';
import { Grant, Permission } from './access.js';
import { List, Timestamp, Uuid } from './common.js';

export const Person = z
  .object({
    id: Uuid,
    issuer: z.string().describe("The provider's issuer URL"),
    subject: z.string().describe("The provider's subject: with the issuer, who the person is"),
    email: z.string().nullable().describe('As the provider last said; shown, never trusted for identity'),
    name: z.string().nullable(),
    roles: z.array(Grant).describe('Roles granted here (the console, the API, `npm run people`); the groups the provider names may add more at sign-in'),
    created_at: Timestamp,
    last_sign_in_at: Timestamp.nullable(),
    disabled_at: Timestamp.nullable().describe('Disabled people cannot sign in, and their sessions end'),
  })
  .describe('A person of the tenant');
export type Person = z.infer<typeof Person>;

export const PersonList = List(Person);

export const PersonRoles = z
  .object({ roles: z.array(Grant).max(20).describe("The person's roles granted here; [] removes every one and ends their sessions") })
  .strict();

export const PersonSession = z.object({
  id: Uuid,
  created_at: Timestamp,
  seen_at: Timestamp,
  expires_at: Timestamp.describe('When it ends at the latest (its idle expiry may come first)'),
});
export const PersonSessionList = List(PersonSession);

export const PersonActor = z
  .object({ kind: z.literal('person'), issuer: z.string(), subject: z.string(), email: z.string().nullable().describe('Shown, never trusted for identity') })
  .describe("A person signed in with the tenant's OpenID provider");
export const KeyActor = z.object({ kind: z.literal('key'), id: Uuid }).describe('An API key');
export const GatewayActor = z.object({ kind: z.literal('gateway') }).describe('AUTH_MODE=header: the gateway in front, which speaks for the tenant');
export const Actor = z.discriminatedUnion('kind', [PersonActor, KeyActor, GatewayActor]).describe('Who made a request');
export type Actor = z.infer<typeof Actor>;

export const CallerIdentity = z
  .object({
    tenant_id: z.string(),
    actor: Actor,
    roles: z.array(Grant).describe('Every role the caller holds: granted here and, for a person, by the groups the provider named at sign-in'),
    permissions: z.array(Permission).describe('The permissions those roles hold (a role for named agents holds them on those agents only)'),
    csrf_token: z
      .string()
      .nullable()
      .describe('A signed-in person: send it as `x-csrf-token` on every request that changes something; null for keys and the gateway'),
    session_expires_at: Timestamp.nullable(),
  })
  .describe('Who the caller is and what they may do');
export type CallerIdentity = z.infer<typeof CallerIdentity>;

/** What `POST /auth/logout` answers: where to send the browser to sign out at the provider too. */
export const SignedOut = z
  .object({
    end_session_url: z.string().nullable().describe("The provider's sign-out page (RP-initiated logout), or null when it has none"),
  })
  .describe('The session has ended');

export const SignInOptions = z
  .object({
    provider: z
      .object({
        issuer: z.string().describe("The provider's issuer URL"),
        sign_in_url: z.string().describe('Where a browser goes to sign in (GET; `return_to` names where it comes back)'),
      })
      .nullable()
      .describe('null: this server has no OpenID provider (OIDC_ISSUER); sign in with an API key or, behind a gateway, a tenant id'),
    signed_in: z.boolean().describe("Whether the request carries a live session (the browser's cookie): GET /api/v1/me then says whose"),
  })
  .describe('How people sign in');
