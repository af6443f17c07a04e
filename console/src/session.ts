// Who the console signs in as: a tenant id (AUTH_MODE=header) or an API key (AUTH_MODE=api_key),
// kept in this tab's sessionStorage only: closing the tab forgets it, and no other tab sees it.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { createSwitchboardClient, type SwitchboardClient } from '@switchboard/client';

export type Credentials = { mode: 'tenant'; tenantId: string } | { mode: 'key'; apiKey: string };

const KEY = 'switchboard.console.session';

export function loadCredentials(): Credentials | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const c = JSON.parse(raw) as Credentials;
    if (c.mode === 'tenant' && typeof c.tenantId === 'string' && c.tenantId) return c;
    if (c.mode === 'key' && typeof c.apiKey === 'string' && c.apiKey) return c;
  } catch {
    // A damaged entry: sign in again.
  }
  return null;
}

export function saveCredentials(c: Credentials | null): void {
  if (c) sessionStorage.setItem(KEY, JSON.stringify(c));
  else sessionStorage.removeItem(KEY);
}

/** The typed client for the signed-in tenant (`fetch`: another way of sending, as an upload's progress needs). */
export function clientFor(c: Credentials, fetch?: typeof globalThis.fetch): SwitchboardClient {
  return createSwitchboardClient({
    baseUrl: location.origin,
    ...(c.mode === 'tenant' ? { tenantId: c.tenantId } : { apiKey: c.apiKey }),
    ...(fetch ? { fetch } : {}),
  });
}

export interface Session {
  credentials: Credentials;
  client: SwitchboardClient;
  signOut: () => void;
}

/** Provided by the shell (app.tsx) around the signed-in pages. */
export const SessionContext = createContext<Session | null>(null);

/** The signed-in session; pages render only inside one. */
export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in page');
  return s;
}
