// Trained routers by tenant and definition digest (table stored_routers). A router is a pure
// function of the definition, so whichever process trains it first stores it and every other
// process, now or after a restart, loads it.
import type { Statement } from 'better-sqlite3';
import type { Database } from './db.js';

export interface StoredRouter {
  format: number;
  model: string;
  state: Buffer;
}

export class RouterStore {
  private statement: Statement | undefined;

  constructor(private readonly db: Database) {}

  async load(tenantId: string, digest: string): Promise<StoredRouter | null> {
    if (this.db.dialect === 'postgres') return this.loadPostgres(tenantId, digest);
    const reader = this.db.blobReader?.();
    if (reader) {
      // Its own connection and page cache (db.ts); the statement is prepared once per reader.
      this.statement ??= reader.prepare('select format, model, state from stored_routers where tenant_id = ? and digest = ?');
      const r = this.statement.get(tenantId, digest) as { format: number; model: string; state: Buffer } | undefined;
      return r ? { format: r.format, model: r.model, state: r.state } : null;
    }
    const r = await this.db
      .knex('stored_routers')
      .where({ tenant_id: tenantId, digest })
      .first<{ format: number | string; model: string; state: Buffer } | undefined>('format', 'model', 'state');
    // Both drivers answer a Buffer of its own: the loaded router's arrays are views on it, not copies.
    return r ? { format: Number(r.format), model: r.model, state: r.state } : null;
  }

  /**
   * On PostgreSQL a bytea arrives as hex text, twice its size; PostgreSQL's own base64 is a third
   * smaller and decodes as fast (a 26 MB router: 240 ms instead of 310 ms on loopback).
   * node-postgres's per-query `binary` flag would be faster still, but it hands back a bytea
   * decoded as UTF-8 text, which corrupts it. Node's base64 decoder skips the line breaks
   * PostgreSQL puts in.
   */
  private async loadPostgres(tenantId: string, digest: string): Promise<StoredRouter | null> {
    const r = await this.db
      .knex('stored_routers')
      .where({ tenant_id: tenantId, digest })
      .first<{ format: number | string; model: string; state: string } | undefined>('format', 'model', this.db.knex.raw(`encode(state, 'base64') as state`));
    return r ? { format: Number(r.format), model: r.model, state: Buffer.from(r.state, 'base64') } : null;
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
