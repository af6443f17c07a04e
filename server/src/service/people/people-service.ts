// People and their sessions (docs/people.md). A person signs in with the tenant's OpenID provider
// (oidc.ts); who they are is the provider's issuer and subject, never their email. Their roles are
// those granted here and those the provider's groups give (OIDC_GROUP_ROLES) at sign-in. A session
// is a random cookie whose SHA-256 alone is stored; it ends after SESSION_IDLE_MINUTES unused,
// SESSION_MAX_HOURS after sign-in, at sign-out, when its person is disabled or left without any
// role. Every request reads the session and its person from the database, so a change made on one
// replica holds on the next request on every other.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ROLE_PERMISSIONS, storedGrants, TenantId, type Grant, type Person, type Permission } from '@switchboard/contract';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { Database } from '../../store/db.js';
import { PeopleStore, type PersonRow, type SessionRow } from '../../store/people-store.js';
import { OidcClient, ProviderError, type OidcSettings } from './oidc.js';

/** How long a sign-in may take between the redirect to the provider and its callback. */
const SIGN_IN_MS = 10 * 60_000;
/** A session's last use is written at most this often (a write per request would be a write per click). */
const SEEN_EVERY_MS = 60_000;

export interface PeopleSettings {
  oidc:
    | (Omit<OidcSettings, 'redirectUri'> & {
        tenant: string | null;
        tenantClaim: string | null;
        groupsClaim: string;
        groupRoles: Readonly<Record<string, readonly Grant[]>>;
      })
    | null;
  sessions: { idleMs: number; maxMs: number };
  /** The server's address as browsers reach it (PUBLIC_URL or HOST:PORT). */
  serviceUrl: string;
}

/** A person signed in, as a request's authentication finds them. */
export interface PersonPrincipal {
  tenantId: string;
  personId: string;
  sessionId: string;
  grants: Grant[];
  csrf: string;
  expiresAt: string;
  actor: { kind: 'person'; issuer: string; subject: string; email: string | null };
}

const hashOf = (cookie: string) => createHash('sha256').update(cookie).digest('hex');
const token = () => randomBytes(32).toString('base64url');

const toPerson = (r: PersonRow): Person => ({
  id: r.id,
  issuer: r.issuer,
  subject: r.subject,
  email: r.email,
  name: r.name,
  roles: storedGrants(r.roles),
  created_at: r.created_at,
  last_sign_in_at: r.last_sign_in_at,
  disabled_at: r.disabled_at,
});

/** The permissions some grant holds, on the tenant or on some agent. */
export const permissionsOf = (grants: readonly Grant[]): Permission[] => [...new Set(grants.flatMap((g) => ROLE_PERMISSIONS[g.role]))].sort();

export class PeopleService {
  private readonly store: PeopleStore;
  private readonly client: OidcClient | null;
  readonly redirectUri: string;

  constructor(
    db: Database,
    private readonly clock: Clock,
    private readonly settings: PeopleSettings,
  ) {
    this.store = new PeopleStore(db);
    this.redirectUri = `${settings.serviceUrl}/auth/callback`;
    this.client = settings.oidc ? new OidcClient({ ...settings.oidc, redirectUri: this.redirectUri }) : null;
  }

  get signInEnabled(): boolean {
    return this.client !== null;
  }

  /** The provider people sign in with, or null. */
  get issuer(): string | null {
    return this.settings.oidc?.issuer ?? null;
  }

  private provider(): OidcClient {
    if (!this.client) throw new NotFoundError('not_found', 'Sign-in with an OpenID provider is not configured on this server (OIDC_ISSUER)');
    return this.client;
  }

  /** A new sign-in: the provider's page to send the browser to, and the state its cookie must carry back. */
  async beginSignIn(returnTo: string): Promise<{ url: string; state: string }> {
    const { url, state, nonce, verifier } = await this.provider().begin();
    await this.store.insertAttempt({ state, nonce, verifier, return_to: returnTo, created_at: iso(this.clock.now()) });
    return { url, state };
  }

  /**
   * The provider's callback: its state must be the one this browser's cookie holds and one not yet
   * used, its code is redeemed and the ID token checked, and the person must hold a role.
   */
  async completeSignIn(callback: URL, cookieState: string | undefined): Promise<{ cookie: string; returnTo: string; expiresAt: string }> {
    const provider = this.provider();
    const params = callback.searchParams;
    if (params.get('error')) throw new UnauthorizedError(`The provider refused the sign-in: ${params.get('error')}`);
    const state = params.get('state');
    if (!state || !cookieState || state !== cookieState) throw new UnauthorizedError('This sign-in was not started in this browser: start again');
    const attempt = await this.store.takeAttempt(state);
    if (!attempt || Date.parse(attempt.created_at) + SIGN_IN_MS < this.clock.now().getTime())
      throw new UnauthorizedError('This sign-in has expired or was used already: start again');
    let claims: Record<string, unknown>;
    let idToken: string | undefined;
    try {
      ({ claims, idToken } = await provider.complete(callback, attempt));
    } catch (err) {
      if (err instanceof ProviderError) throw new UnauthorizedError(`The provider's answer failed a check: ${err.message}`);
      throw err;
    }
    const oidc = this.settings.oidc!;
    const tenantId = oidc.tenant ?? claims[oidc.tenantClaim!];
    if (typeof tenantId !== 'string' || !TenantId.safeParse(tenantId).success)
      throw new ForbiddenError(`The ID token names no tenant in its "${oidc.tenantClaim}" claim`);
    const now = iso(this.clock.now());
    const person = await this.store.signedIn(
      {
        id: randomUUID(),
        tenant_id: tenantId,
        issuer: String(claims.iss),
        subject: String(claims.sub),
        email: typeof claims.email === 'string' ? claims.email.slice(0, 320) : null,
        name: typeof claims.name === 'string' ? claims.name.slice(0, 200) : null,
      },
      now,
    );
    if (person.disabled_at) throw new ForbiddenError('This person is disabled in this tenant');
    const groups = claims[oidc.groupsClaim];
    const fromGroups = (Array.isArray(groups) ? groups : []).flatMap((g) => (typeof g === 'string' ? (oidc.groupRoles[g] ?? []) : []));
    if (!storedGrants(person.roles).length && !fromGroups.length)
      throw new ForbiddenError(
        `You hold no role in tenant "${tenantId}". An owner can grant one in the console, or: npm run people -- grant --tenant ${tenantId} --subject ${person.subject} --role viewer`,
      );
    const cookie = token();
    const expiresAt = iso(new Date(this.clock.now().getTime() + this.settings.sessions.maxMs));
    await this.store.insertSession({
      id_hash: hashOf(cookie),
      id: randomUUID(),
      tenant_id: tenantId,
      person_id: person.id,
      group_roles: JSON.stringify(fromGroups),
      csrf: token(),
      id_token: idToken ?? null,
      created_at: now,
      seen_at: now,
      expires_at: expiresAt,
      revoked_at: null,
    });
    return { cookie, returnTo: attempt.return_to, expiresAt };
  }

  /** The person a session cookie stands for, or null when it is unknown, ended, idle too long or without a role. */
  async authenticate(cookie: string): Promise<PersonPrincipal | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(cookie)) return null;
    const idHash = hashOf(cookie);
    const s = await this.store.session(idHash);
    const now = this.clock.now().getTime();
    if (!s || Date.parse(s.expires_at) <= now || Date.parse(s.seen_at) + this.settings.sessions.idleMs <= now || s.person.disabled_at) return null;
    const grants = [...storedGrants(s.person.roles), ...storedGrants(s.group_roles)];
    if (!grants.length) {
      await this.store.revokeSession(s.tenant_id, { id_hash: idHash }, iso(new Date(now)));
      return null;
    }
    await this.store.touch(idHash, iso(new Date(now)), iso(new Date(now - SEEN_EVERY_MS)));
    return {
      tenantId: s.tenant_id,
      personId: s.person_id,
      sessionId: s.id,
      grants,
      csrf: s.csrf,
      expiresAt: s.expires_at,
      actor: { kind: 'person', issuer: s.person.issuer, subject: s.person.subject, email: s.person.email },
    };
  }

  /** Ends the session, and says where the browser signs out at the provider too. */
  async signOut(p: PersonPrincipal, returnTo: string): Promise<{ end_session_url: string | null }> {
    const idToken = await this.store.idToken(p.tenantId, p.sessionId);
    await this.store.revokeSession(p.tenantId, { id: p.sessionId }, iso(this.clock.now()));
    return { end_session_url: this.client ? await this.client.endSessionUrl(idToken, returnTo) : null };
  }

  async list(tenantId: string): Promise<Person[]> {
    return (await this.store.list(tenantId)).map(toPerson);
  }

  private async existing(tenantId: string, id: string): Promise<PersonRow> {
    const p = await this.store.person(tenantId, { id });
    if (!p) throw new NotFoundError('not_found', `No person ${id}`);
    return p;
  }

  /**
   * Sets a person's roles, read again by their next request on every replica; a session left
   * without any role (here or from the provider's groups) ends there.
   */
  async setRoles(tenantId: string, id: string, roles: Grant[]): Promise<Person> {
    await this.existing(tenantId, id);
    await this.store.setRoles(tenantId, id, JSON.stringify(roles));
    return toPerson(await this.existing(tenantId, id));
  }

  async sessions(tenantId: string, id: string): Promise<{ id: string; created_at: string; seen_at: string; expires_at: string }[]> {
    await this.existing(tenantId, id);
    return (await this.store.sessions(tenantId, id, iso(this.clock.now()))).map((s: SessionRow) => ({
      id: s.id,
      created_at: s.created_at,
      seen_at: s.seen_at,
      expires_at: s.expires_at,
    }));
  }

  async endSessions(tenantId: string, id: string): Promise<number> {
    await this.existing(tenantId, id);
    return this.store.revokeSession(tenantId, { person_id: id }, iso(this.clock.now()));
  }

  /**
   * `npm run people -- grant`: adds roles to the person of this issuer and subject, made known
   * before their first sign-in when new (the first owner).
   */
  async grant(tenantId: string, who: { issuer: string; subject: string }, add: Grant[]): Promise<Person> {
    const now = iso(this.clock.now());
    const p = await this.store.ensure({
      id: randomUUID(),
      tenant_id: tenantId,
      ...who,
      email: null,
      name: null,
      roles: '[]',
      created_at: now,
      last_sign_in_at: null,
      disabled_at: null,
    });
    const roles = [...storedGrants(p.roles)];
    for (const g of add) if (!roles.some((r) => JSON.stringify(r) === JSON.stringify(g))) roles.push(g);
    return this.setRoles(tenantId, p.id, roles);
  }

  /** Disables a person (their sessions end) or enables them again. */
  async setDisabled(tenantId: string, id: string, disabled: boolean): Promise<Person> {
    await this.existing(tenantId, id);
    await this.store.setDisabled(tenantId, id, disabled ? iso(this.clock.now()) : null);
    if (disabled) await this.store.revokeSession(tenantId, { person_id: id }, iso(this.clock.now()));
    return toPerson(await this.existing(tenantId, id));
  }

  /** Deletes sessions past their absolute expiry and abandoned sign-ins. */
  async sweep(): Promise<void> {
    const now = this.clock.now();
    await this.store.sweep(iso(now), iso(new Date(now.getTime() - SIGN_IN_MS)));
  }
}
