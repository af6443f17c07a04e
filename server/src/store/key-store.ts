// API keys as stored: hashes of their secrets, never the secrets. Reads by tenant, except the
// lookup by key id that authentication needs before it knows the tenant.
import type { Knex } from 'knex';
import type { Database } from './db.js';
import type { ApiKeyTableRow } from './rows.js';

export class KeyStore {
  private readonly knex: Knex;
  constructor(db: Database) {
    this.knex = db.knex;
  }

  async insert(row: ApiKeyTableRow): Promise<void> {
    await this.knex('api_keys').insert(row);
  }

  list(tenantId: string): Promise<ApiKeyTableRow[]> {
    return this.knex('api_keys').where({ tenant_id: tenantId }).orderBy('created_at', 'desc');
  }

  /** Revokes an active key of the tenant; false when there is none. */
  async revoke(tenantId: string, id: string, now: string): Promise<boolean> {
    return (await this.knex('api_keys').where({ tenant_id: tenantId, id }).whereNull('revoked_at').update({ revoked_at: now })) > 0;
  }

  /** Of these key ids, those still active. */
  async active(ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const rows: { id: string }[] = await this.knex('api_keys').whereIn('id', ids).whereNull('revoked_at').select('id');
    return rows.map((r) => r.id);
  }

  byId(id: string): Promise<ApiKeyTableRow | undefined> {
    return this.knex('api_keys').where({ id }).first();
  }

  /** The service's own secret `name`: the one stored, else `made` stored now (the first process to store one wins). */
  async serviceSecret(name: string, made: string, now: string): Promise<string> {
    await this.knex('service_secrets').insert({ name, secret: made, created_at: now }).onConflict('name').ignore();
    const row: { secret: string } | undefined = await this.knex('service_secrets').where({ name }).first('secret');
    if (!row) throw new Error(`the service secret ${name} was not stored`);
    return row.secret;
  }
}
