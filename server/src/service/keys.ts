// API keys: `sbk_<id>_<secret>`, each bound to one tenant with roles (or scopes, which stand for roles). Only a SHA-256 of the
// secret is stored; a presented key is found by its id and its secret compared in constant time.
// Publishable keys (`pk_<32 hex>`) are the web chat widget's: public by design (they sit in a
// page's source), bound to a tenant, some agents and some origins, and accepted by the widget's
// routes alone; they carry no scope of the API.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { SCOPE_ROLES, storedGrants, type ApiKey, type Grant, type Scope } from '@switchboard/contract';
import { NotFoundError } from '../errors.js';
import { iso, type Clock } from '../lib/clock.js';
import type { Database } from '../store/db.js';
import { KeyStore } from '../store/key-store.js';
import type { ApiKeyTableRow } from '../store/rows.js';

const KEY = /^sbk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;
const hashOf = (secret: string) => createHash('sha256').update(secret).digest();
// Compared against when no key has the presented id, so that an unknown id costs the same time.
const DECOY = hashOf('decoy');

export interface KeyPrincipal {
  keyId: string;
  tenantId: string;
  grants: Grant[];
}

const PUBLISHABLE = /^pk_[0-9a-f]{32}$/;

/** What a publishable key allows: one tenant, these agents, pages of these origins. */
export interface PublishableKey {
  keyId: string;
  tenantId: string;
  agents: readonly string[];
  origins: readonly string[];
}

const jsonList = (text: string | null | undefined): string[] => {
  const v: unknown = text ? JSON.parse(text) : [];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
};

const scopesOf = (r: ApiKeyTableRow): Scope[] => (r.public_key || !r.scopes ? [] : (r.scopes.split(',') as Scope[]));

/**
 * A secret key's grants: those stored, else its scopes' roles. Stored grants that fail their
 * schema (a row a bug or a hand corrupted) grant nothing: the key is refused, not widened.
 */
function grantsOf(r: ApiKeyTableRow): Grant[] {
  if (r.public_key) return [];
  if (r.roles == null) return scopesOf(r).map((scope) => ({ role: SCOPE_ROLES[scope] }));
  // A key holds at least one grant: an empty list is as corrupted as text that is not JSON.
  return storedGrants(r.roles);
}

const toApi = (r: ApiKeyTableRow): ApiKey => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  scopes: scopesOf(r),
  roles: grantsOf(r),
  widget: r.public_key ? { agents: jsonList(r.agents), origins: jsonList(r.origins), key: r.public_key } : null,
  created_at: r.created_at,
  revoked_at: r.revoked_at,
});

export class KeyService {
  private readonly store: KeyStore;
  private readonly serviceSecrets = new Map<string, Promise<Buffer>>();

  constructor(
    db: Database,
    private readonly clock: Clock,
  ) {
    this.store = new KeyStore(db);
  }

  /** A secret key holding `access`: scopes (which stand for roles) or grants. */
  async create(tenantId: string, access: Scope[] | { roles: Grant[] }, name?: string): Promise<ApiKey & { key: string }> {
    const id = randomUUID();
    const secret = randomBytes(32).toString('base64url');
    const key = `sbk_${id.replace(/-/g, '')}_${secret}`;
    const row: ApiKeyTableRow = {
      id,
      tenant_id: tenantId,
      name: name ?? null,
      prefix: key.slice(0, 12),
      secret_hash: hashOf(secret).toString('hex'),
      scopes: Array.isArray(access) ? [...new Set(access)].sort().join(',') : '',
      roles: Array.isArray(access) ? null : JSON.stringify(access.roles),
      created_at: iso(this.clock.now()),
      revoked_at: null,
    };
    await this.store.insert(row);
    return { ...toApi(row), key };
  }

  /** A publishable key for the web chat widget: public, bound to `agents` and the pages of `origins`. */
  /** A publishable key for the widget; `id` is for fixtures that must know the key beforehand (the demo's). */
  async createPublishable(
    tenantId: string,
    widget: { agents: string[]; origins: string[] },
    name?: string,
    id: string = randomUUID(),
  ): Promise<ApiKey & { key: string }> {
    const key = `pk_${id.replace(/-/g, '')}`;
    const row: ApiKeyTableRow = {
      id,
      tenant_id: tenantId,
      name: name ?? null,
      prefix: key.slice(0, 12),
      // Never a secret key's: the widget's key proves nothing, so nothing is hashed to compare.
      secret_hash: '',
      scopes: 'widget',
      created_at: iso(this.clock.now()),
      revoked_at: null,
      agents: JSON.stringify([...new Set(widget.agents)]),
      origins: JSON.stringify([...new Set(widget.origins)]),
      public_key: key,
    };
    await this.store.insert(row);
    return { ...toApi(row), key };
  }

  /**
   * The service's own 32-byte secret `name`, the same on every replica (store/migrations/024):
   * read once per process; a failed read is tried again by the next caller.
   */
  serviceSecret(name: string): Promise<Buffer> {
    let secret = this.serviceSecrets.get(name);
    if (!secret) {
      secret = this.store.serviceSecret(name, randomBytes(32).toString('base64url'), iso(this.clock.now())).then((s) => Buffer.from(s, 'base64url'));
      secret.catch(() => this.serviceSecrets.delete(name));
      this.serviceSecrets.set(name, secret);
    }
    return secret;
  }

  /** The publishable key's tenant, agents and origins; null for a malformed, unknown or revoked one. */
  async publishable(presented: string): Promise<PublishableKey | null> {
    if (!PUBLISHABLE.test(presented)) return null;
    const h = presented.slice(3);
    const row = await this.store.byId(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
    if (!row || row.revoked_at || row.public_key !== presented) return null;
    return { keyId: row.id, tenantId: row.tenant_id, agents: jsonList(row.agents), origins: jsonList(row.origins) };
  }

  async list(tenantId: string): Promise<ApiKey[]> {
    return (await this.store.list(tenantId)).map(toApi);
  }

  async revoke(tenantId: string, id: string): Promise<void> {
    if (!(await this.store.revoke(tenantId, id, iso(this.clock.now())))) throw new NotFoundError('not_found', `No active key ${id}`);
  }

  /** Of these key ids, the ones that are revoked (or gone). */
  async revokedAmong(ids: string[]): Promise<string[]> {
    const alive = new Set(await this.store.active(ids));
    return ids.filter((id) => !alive.has(id));
  }

  /** The key's tenant and grants, or null for a malformed, unknown or revoked key. */
  async authenticate(presented: string): Promise<KeyPrincipal | null> {
    const m = KEY.exec(presented);
    if (!m) return null;
    const id = `${m[1].slice(0, 8)}-${m[1].slice(8, 12)}-${m[1].slice(12, 16)}-${m[1].slice(16, 20)}-${m[1].slice(20)}`;
    const row = await this.store.byId(id);
    // A publishable key's row has no secret: it is compared like an unknown id, and refused.
    const expected = row && !row.public_key ? Buffer.from(row.secret_hash, 'hex') : DECOY;
    const matches = timingSafeEqual(expected, hashOf(m[2]));
    if (!row || !matches || row.revoked_at || row.public_key) return null;
    return { keyId: row.id, tenantId: row.tenant_id, grants: grantsOf(row) };
  }
}
