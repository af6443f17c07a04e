// Tenants' privacy policies: one row each, the policy as JSON (null once removed, so the revision
// goes on growing with every change and a replica never takes a new policy for one it holds).
// Every query filters by tenant_id.
import type { Knex } from 'knex';
import type { Database } from './db.js';

export interface PrivacyRow {
  policy: unknown;
  revision: number;
  updatedAt: string;
}

/** A row as the drivers return it (PostgreSQL's may return an integer as a string). */
interface Stored {
  tenant_id: string;
  policy: string;
  revision: number | string;
  updated_at: string;
}

export class PrivacyStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  async get(tenantId: string): Promise<PrivacyRow | null> {
    const r = await this.knex<Stored>('tenant_privacy').where({ tenant_id: tenantId }).first('policy', 'revision', 'updated_at');
    return r ? { policy: JSON.parse(r.policy) as unknown, revision: Number(r.revision), updatedAt: r.updated_at } : null;
  }

  /** Sets the policy (null: none); the revision grows by one, so a replica holding the last one sees the change. */
  async put(tenantId: string, policy: unknown, now: string): Promise<PrivacyRow> {
    const json = JSON.stringify(policy);
    const [row] = await this.knex<Stored>('tenant_privacy')
      .insert({ tenant_id: tenantId, policy: json, revision: 1, updated_at: now })
      .onConflict('tenant_id')
      .merge({ policy: json, revision: this.knex.raw('tenant_privacy.revision + 1'), updated_at: now })
      .returning(['revision']);
    return { policy, revision: Number(row.revision), updatedAt: now };
  }
}
