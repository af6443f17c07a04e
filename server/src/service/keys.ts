// API keys: `sbk_<id>_<secret>`, each bound to one tenant with scopes. Only a SHA-256 of the
// secret is stored; a presented key is found by its id and its secret compared in constant time.
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { ApiKey, Scope } from '@switchboard/contract';
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
  scopes: Scope[];
}

const toApi = (r: Pick<ApiKeyTableRow, 'id' | 'name' | 'prefix' | 'scopes' | 'created_at' | 'revoked_at'>): ApiKey => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  scopes: r.scopes.split(',') as Scope[],
  created_at: r.created_at,
  revoked_at: r.revoked_at,
});

export class KeyService {
  private readonly store: KeyStore;

  constructor(
    db: Database,
    private readonly clock: Clock,
  ) {
    this.store = new KeyStore(db);
  }

  async create(tenantId: string, scopes: Scope[], name?: string): Promise<ApiKey & { key: string }> {
    const id = randomUUID();
    const secret = randomBytes(32).toString('base64url');
    const key = `sbk_${id.replace(/-/g, '')}_${secret}`;
    const row: ApiKeyTableRow = {
      id,
      tenant_id: tenantId,
      name: name ?? null,
      prefix: key.slice(0, 12),
      secret_hash: hashOf(secret).toString('hex'),
      scopes: [...new Set(scopes)].sort().join(','),
      created_at: iso(this.clock.now()),
      revoked_at: null,
    };
    await this.store.insert(row);
    return { ...toApi(row), key };
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

  /** The key's tenant and scopes, or null for a malformed, unknown or revoked key. */
  async authenticate(presented: string): Promise<KeyPrincipal | null> {
    const m = KEY.exec(presented);
    if (!m) return null;
    const id = `${m[1].slice(0, 8)}-${m[1].slice(8, 12)}-${m[1].slice(12, 16)}-${m[1].slice(16, 20)}-${m[1].slice(20)}`;
    const row = await this.store.byId(id);
    const expected = row ? Buffer.from(row.secret_hash, 'hex') : DECOY;
    const matches = timingSafeEqual(expected, hashOf(m[2]));
    if (!row || !matches || row.revoked_at) return null;
    return { keyId: row.id, tenantId: row.tenant_id, scopes: row.scopes.split(',') as Scope[] };
  }
}
