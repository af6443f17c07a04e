// Which secrets a tenant's definitions can read: operator secrets from the environment that the
// operator granted to the tenant, and the tenant's own, set through the write-only secrets API and
// kept encrypted (AES-256-GCM under SECRETS_KEY, bound to tenant and name). A secret that exists
// but is not granted is indistinguishable from one that does not exist.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { OperatorSecret } from '../config.js';
import { NotFoundError, SecretsDisabledError } from '../errors.js';
import { iso, type Clock } from '../lib/clock.js';
import type { SecretStore } from '../store/secret-store.js';

const aad = (tenantId: string, name: string) => Buffer.from(`${tenantId}\u0000${name}`);

/** A value encrypted with AES-256-GCM under `key`, bound to `binding` (authenticated, not encrypted). */
export interface Sealed {
  ciphertext: string;
  iv: string;
  tag: string;
}

export function seal(key: Buffer, binding: Buffer, value: string): Sealed {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(binding);
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return { ciphertext: ciphertext.toString('base64'), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
}

/** The value `seal` made; throws when it does not open under this key and binding. */
export function unseal(key: Buffer, binding: Buffer, sealed: Sealed): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(binding);
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]).toString('utf8');
}

export class SecretService {
  constructor(
    private readonly store: SecretStore,
    private readonly operator: Readonly<Record<string, OperatorSecret>>,
    private readonly key: Buffer | undefined,
    private readonly clock: Clock,
    private readonly log?: { warn(o: object, m: string): void },
  ) {}

  /** Whether an operator secret is granted to the tenant. */
  private granted(name: string, tenantId: string): boolean {
    const s = Object.prototype.hasOwnProperty.call(this.operator, name) ? this.operator[name] : undefined;
    return !!s && (s.tenants.includes('*') || s.tenants.includes(tenantId));
  }

  /** The values of `names` this tenant may use: its own secrets first, then the operator's grants. */
  async forTenant(tenantId: string, names: readonly string[]): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    if (!names.length) return out;
    for (const n of names) if (this.granted(n, tenantId)) out[n] = this.operator[n].value;
    if (this.key) {
      for (const row of await this.store.get(tenantId, names)) {
        try {
          out[row.name] = unseal(this.key, aad(tenantId, row.name), row);
        } catch {
          // A row that does not open under this key, tenant and name (another key, a copied or
          // altered row) is no secret of this tenant's.
          this.log?.warn(
            { tenant: tenantId, secret: row.name },
            'a stored secret does not decrypt for its tenant and name (SECRETS_KEY changed, or the row was altered)',
          );
        }
      }
    }
    return out;
  }

  async put(tenantId: string, name: string, value: string): Promise<void> {
    if (!this.key) throw new SecretsDisabledError();
    await this.store.put(tenantId, name, seal(this.key, aad(tenantId, name), value), iso(this.clock.now()));
  }

  async delete(tenantId: string, name: string): Promise<void> {
    if (!(await this.store.delete(tenantId, name))) throw new NotFoundError('not_found', `No secret ${name}`);
  }

  /** The tenant's own secrets, names and times only: values are never read back. */
  async list(tenantId: string): Promise<{ name: string; created_at: string; updated_at: string }[]> {
    return (await this.store.names(tenantId)).map((r) => ({ name: r.name, created_at: r.createdAt, updated_at: r.updatedAt }));
  }

  /** Operator secrets granted to nobody (worth a warning at start-up). */
  ungranted(): string[] {
    return Object.entries(this.operator)
      .filter(([, s]) => s.tenants.length === 0)
      .map(([n]) => n);
  }
}
