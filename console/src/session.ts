// Who the console signs in as: a tenant id (AUTH_MODE=header), an API key (AUTH_MODE=api_key),
// kept in this tab's sessionStorage only (closing the tab forgets it, and no other tab sees it), or
// a person signed in with the company's OpenID provider, whose session is an HttpOnly cookie the
// page never reads: the tab keeps only the session's CSRF token, sent on every call.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import {
  allows,
  createSwitchboardClient,
  ROLE_PERMISSIONS,
  type CallerIdentity,
  type Permission,
  type Role,
  type SwitchboardClient,
} from '@switchboard/client';

export type Credentials =
  { mode: 'tenant'; tenantId: string } | { mode: 'key'; apiKey: string } | { mode: 'person'; csrf: string; tenantId: string; name: string };

const KEY = 'switchboard.console.session';

export function loadCredentials(): Credentials | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const c = JSON.parse(raw) as Credentials;
    if (c.mode === 'tenant' && typeof c.tenantId === 'string' && c.tenantId) return c;
    if (c.mode === 'key' && typeof c.apiKey === 'string' && c.apiKey) return c;
    if (c.mode === 'person' && typeof c.csrf === 'string' && c.csrf) return c;
  } catch {
    // A damaged entry: sign in again.
  }
  return null;
}

export function saveCredentials(c: Credentials | null): void {
  if (c) sessionStorage.setItem(KEY, JSON.stringify(c));
  else sessionStorage.removeItem(KEY);
}

/**
 * The person this browser's session cookie stands for, if any (after the provider sent the browser
 * back): null when there is none, or when the server signs nobody in that way.
 */
export async function personSignedIn(): Promise<Credentials | null> {
  try {
    const client = createSwitchboardClient({ baseUrl: location.origin });
    // Asked first so that a browser without a session never meets a refusal.
    const options = await client.auth.getSignInOptions();
    if (options.status !== 200 || !options.body.signed_in) return null;
    const res = await client.api.getIdentity({});
    if (res.status !== 200 || res.body.actor.kind !== 'person' || !res.body.csrf_token) return null;
    const a = res.body.actor;
    return { mode: 'person', csrf: res.body.csrf_token, tenantId: res.body.tenant_id, name: a.email ?? a.subject };
  } catch {
    return null;
  }
}

/** The typed client for the signed-in tenant (`fetch`: another way of sending, as an upload's progress needs). */
export function clientFor(c: Credentials, fetch?: typeof globalThis.fetch): SwitchboardClient {
  return createSwitchboardClient({
    baseUrl: location.origin,
    ...(c.mode === 'tenant' ? { tenantId: c.tenantId } : c.mode === 'key' ? { apiKey: c.apiKey } : { headers: { 'x-csrf-token': c.csrf } }),
    ...(fetch ? { fetch } : {}),
  });
}

export interface Session {
  credentials: Credentials;
  client: SwitchboardClient;
  signOut: () => void;
  /** Who the server says the caller is (GET /api/v1/me); null until it has answered. */
  identity: CallerIdentity | null;
}

/** Provided by the shell (app.tsx) around the signed-in pages. */
export const SessionContext = createContext<Session | null>(null);

/** The signed-in session; pages render only inside one. */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}

/** What the caller's roles allow, to disable what they cannot do; everything until the server has said who they are. */
export function useCan(): (permission: Permission, slug?: string) => boolean {
  const { identity } = useSession();
  return (permission, slug) => !identity || allows(identity.roles, permission, slug);
}

/** Why a control is off: the permission it needs and the roles that hold it. */
export function needs(permission: Permission): string {
  const roles = (Object.keys(ROLE_PERMISSIONS) as Role[]).filter((r) => ROLE_PERMISSIONS[r].includes(permission));
  return `Your roles do not allow this: it needs the “${permission}” permission (${roles.join(', ')}).`;
}
