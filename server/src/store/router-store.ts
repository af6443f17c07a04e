// Trained routers by tenant and definition digest (table stored_routers). A router is a pure
// function of the definition, so whichever process trains it first stores it and every other
// process, now or after a restart, loads it.
import type { Database } from './db.js';

export interface StoredRouter {
  format: number;
  model: string;
  state: Buffer;
}

export class RouterStore {
  constructor(private readonly db: Database) {}

  async load(tenantId: string, digest: string): Promise<StoredRouter | null> {
    const r = await this.db
      .knex('stored_routers')
      .where({ tenant_id: tenantId, digest })
      .first<{ format: number | string; model: string; state: Buffer } | undefined>('format', 'model', 'state');
    // Both drivers answer a Buffer of its own: the loaded router's arrays are views on it, not copies.
    return r ? { format: Number(r.format), model: r.model, state: r.state } : null;
  }

  /** Stores a router, replacing one of another format or model for the same definition. */
  async save(tenantId: string, digest: string, router: StoredRouter, now: string): Promise<void> {
    await this.db
      .knex('stored_routers')
      .insert({ tenant_id: tenantId, digest, format: router.format, model: router.model, state: router.state, bytes: router.state.length, created_at: now })
      .onConflict(['tenant_id', 'digest'])
      .merge(['format', 'model', 'state', 'bytes', 'created_at']);
  }
}
