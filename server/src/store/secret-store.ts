// Tenants' own secrets, as encrypted rows. Every query filters by tenant_id.
import type { Knex } from 'knex';
import type { Database } from './db.js';

export interface SecretRow {
  name: string;
  ciphertext: string;
  iv: string;
  tag: string;
  createdAt: string;
  updatedAt: string;
}

export class SecretStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  async put(tenantId: string, name: string, sealed: { ciphertext: string; iv: string; tag: string }, now: string): Promise<void> {
    await this.knex('tenant_secrets')
      .insert({ tenant_id: tenantId, name, ...sealed, created_at: now, updated_at: now })
      .onConflict(['tenant_id', 'name'])
      .merge({ ...sealed, updated_at: now });
  }

  async delete(tenantId: string, name: string): Promise<boolean> {
    return (await this.knex('tenant_secrets').where({ tenant_id: tenantId, name }).delete()) > 0;
  }

  async names(tenantId: string): Promise<{ name: string; createdAt: string; updatedAt: string }[]> {
    const rows = await this.knex('tenant_secrets').where({ tenant_id: tenantId }).orderBy('name').select('name', 'created_at', 'updated_at');
    return rows.map((r) => ({ name: r.name, createdAt: r.created_at, updatedAt: r.updated_at }));
  }

  async get(tenantId: string, names: readonly string[]): Promise<SecretRow[]> {
    if (!names.length) return [];
    const rows = await this.knex('tenant_secrets').where({ tenant_id: tenantId }).whereIn('name', names);
    return rows.map((r) => ({ name: r.name, ciphertext: r.ciphertext, iv: r.iv, tag: r.tag, createdAt: r.created_at, updatedAt: r.updated_at }));
  }
}
