// The tenant's privacy policy (GET/PUT/DELETE /api/v1/privacy-policy) and what each agent masks
// under it (docs/privacy.md). Turns read the policy from memory: each process holds a tenant's
// for a second and then asks the database for its revision again, so a change reaches every
// replica within a second, and the one that made it at once. An agent's compiled masking is
// kept beside its compiled version for as long as the tenant's policy keeps its revision.
import { hkdfSync } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { PrivacyDef, type TenantPrivacy } from '@switchboard/contract';
import type { Logger } from 'pino';
import type { CompiledAgent } from '../../engine/compile.js';
import { DefinitionError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { OncePer } from '../../lib/once-per.js';
import type { PrivacyStore } from '../../store/privacy-store.js';
import { PII_TYPES } from './detectors.js';
import { compileMasking, privacyProblems, type Masking } from './policy.js';

/** A tenant's policy as this process holds it. */
interface Held {
  def: PrivacyDef | null;
  revision: number;
  updatedAt: string | null;
  /** When it was read (performance.now()). */
  readAt: number;
}

/** What a stored policy that fails its schema is taken as: every built-in type redacted. */
const FAIL_CLOSED: PrivacyDef = { mask: Object.fromEntries(PII_TYPES.map((t) => [t, 'redact'])) };

export class PrivacyService {
  private readonly held = new LRUCache<string, Held>({ max: 50_000 });
  private readonly reading = new Map<string, Promise<Held>>();
  private readonly compiled = new WeakMap<CompiledAgent, { held: Held; masking: Masking | null }>();
  private readonly hashKeys = new LRUCache<string, Buffer>({ max: 50_000 });
  private readonly complaints = new OncePer();

  constructor(
    private readonly store: PrivacyStore,
    private readonly secretsKey: Buffer | undefined,
    private readonly clock: Clock,
    private readonly opts: { refreshMs?: number; log?: Pick<Logger, 'error'> } = {},
  ) {}

  async get(tenantId: string): Promise<TenantPrivacy> {
    const h = await this.read(tenantId);
    return { policy: h.def, updated_at: h.def ? h.updatedAt : null };
  }

  /** Sets the tenant's policy, refused with every problem when it has one (and the one before stays). */
  async put(tenantId: string, def: PrivacyDef): Promise<TenantPrivacy> {
    const problems = privacyProblems(def, 'body', !!this.secretsKey);
    if (problems.length) throw new DefinitionError(problems);
    const row = await this.store.put(tenantId, def, iso(this.clock.now()));
    this.held.set(tenantId, { def, revision: row.revision, updatedAt: row.updatedAt, readAt: performance.now() });
    return { policy: def, updated_at: row.updatedAt };
  }

  async delete(tenantId: string): Promise<void> {
    const row = await this.store.put(tenantId, null, iso(this.clock.now()));
    this.held.set(tenantId, { def: null, revision: row.revision, updatedAt: null, readAt: performance.now() });
  }

  /** What the agent masks under its tenant's policy now, or null when nothing. */
  async masking(tenantId: string, agent: CompiledAgent): Promise<Masking | null> {
    const h = this.fresh(tenantId) ?? (await this.read(tenantId));
    const c = this.compiled.get(agent);
    if (c && c.held.revision === h.revision && c.held.def === h.def) return c.masking;
    const masking = compileMasking(agent, h.def, h.def || agent.definition.privacy ? this.hashKey(tenantId) : undefined);
    this.compiled.set(agent, { held: h, masking });
    return masking;
  }

  private fresh(tenantId: string): Held | undefined {
    const h = this.held.get(tenantId);
    return h && performance.now() - h.readAt < (this.opts.refreshMs ?? 1000) ? h : undefined;
  }

  /** The tenant's policy from the database; turns that find it stale at once share one read. */
  private read(tenantId: string): Promise<Held> {
    let p = this.reading.get(tenantId);
    if (!p) {
      p = this.store
        .get(tenantId)
        .then((row) => {
          const before = this.held.get(tenantId);
          const readAt = performance.now();
          // The same revision keeps the same policy object, so agents' compiled masking stays.
          if (before && row && before.revision === row.revision) return { ...before, readAt };
          let def: PrivacyDef | null = null;
          if (row && row.policy !== null) {
            const parsed = PrivacyDef.safeParse(row.policy);
            if (parsed.success) def = parsed.data;
            else {
              def = FAIL_CLOSED;
              if (this.complaints.due(tenantId))
                this.opts.log?.error(
                  { tenant: tenantId },
                  'privacy: the stored policy fails its schema; every built-in type is redacted until it is set again',
                );
            }
          }
          return { def, revision: row?.revision ?? 0, updatedAt: row?.updatedAt ?? null, readAt };
        })
        .then((h) => {
          this.held.set(tenantId, h);
          return h;
        })
        .finally(() => this.reading.delete(tenantId));
      this.reading.set(tenantId, p);
    }
    return p;
  }

  /** The tenant's key for `hash`: derived from SECRETS_KEY, so the same value masks alike within a tenant and differently across tenants. */
  private hashKey(tenantId: string): Buffer | undefined {
    if (!this.secretsKey) return undefined;
    let k = this.hashKeys.get(tenantId);
    if (!k) {
      k = Buffer.from(hkdfSync('sha256', this.secretsKey, Buffer.from(tenantId), 'switchboard privacy hash', 32));
      this.hashKeys.set(tenantId, k);
    }
    return k;
  }
}
