// Trained routers by tenant and definition digest (table stored_routers). A router is a pure
// function of the definition, so whichever process trains it first stores it and every other
// process, now or after a restart, loads it.
import type { Statement } from 'better-sqlite3';
import type { Database } from '../db.js';
import { translateDbError } from '../db-errors.js';

export interface StoredRouter {
  format: number;
  model: string;
  state: Buffer;
}

export interface RouterStoreOptions {
  /** The most bytes of stored routers one tenant keeps (ROUTER_STORE_TENANT_MB); the oldest go first. */
  tenantMaxBytes?: number;
  /** How long a router no kept version references is kept (it may be a PUT's, stored before its version). */
  unreferencedGraceMs?: number;
}

/** What a save did to the tenant's stored routers. */
export interface SaveResult {
  /** False when the router alone is larger than the tenant's bound: it is not stored. */
  stored: boolean;
  /** Routers deleted: unreferenced by any kept version, or the oldest, to stay within the bound. */
  deleted: number;
}

const DAY_MS = 86_400_000;

export class RouterStore {
  private statement: Statement | undefined;
  private readonly maxBytes: number;
  private readonly graceMs: number;

  constructor(
    private readonly db: Database,
    opts: RouterStoreOptions = {},
  ) {
    this.maxBytes = opts.tenantMaxBytes ?? 256 * 1048576;
    this.graceMs = opts.unreferencedGraceMs ?? DAY_MS;
  }

  async load(tenantId: string, digest: string): Promise<StoredRouter | null> {
    if (this.db.dialect === 'postgres') return this.loadPostgres(tenantId, digest);
    const reader = this.db.blobReader?.();
    if (reader) {
      // Its own connection and page cache (db.ts); the statement is prepared once per reader.
      let r: { format: number; model: string; state: Buffer } | undefined;
      try {
        this.statement ??= reader.prepare('select format, model, state from stored_routers where tenant_id = ? and digest = ?');
        r = this.statement.get(tenantId, digest) as typeof r;
      } catch (err) {
        throw translateDbError(err);
      }
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

  /**
   * Stores a router of the definition with digest `definition` under `digest`, replacing one of
   * another format or model, then keeps the tenant's stored routers bounded: routers no kept
   * version references (after a grace period, since a PUT stores its router before its version)
   * are deleted, and then the oldest until the tenant's bytes fit `tenantMaxBytes`. A router
   * larger than the bound by itself is not stored (every process that meets it trains its own).
   */
  async save(tenantId: string, digest: string, router: StoredRouter, now: string, definition: string): Promise<SaveResult> {
    const knex = this.db.knex;
    if (router.state.length > this.maxBytes) return { stored: false, deleted: 0 };
    await knex('stored_routers')
      .insert({
        tenant_id: tenantId,
        digest,
        definition,
        format: router.format,
        model: router.model,
        state: router.state,
        bytes: router.state.length,
        created_at: now,
      })
      .onConflict(['tenant_id', 'digest'])
      .merge(['definition', 'format', 'model', 'state', 'bytes', 'created_at']);
    const before = new Date(Date.parse(now) - this.graceMs).toISOString();
    let deleted = await knex('stored_routers')
      .where({ tenant_id: tenantId })
      .whereNot({ digest })
      .whereNotNull('definition')
      .where('created_at', '<', before)
      .whereNotExists(knex('agent_versions').select(knex.raw('1')).where({ tenant_id: tenantId }).whereRaw('agent_versions.digest = stored_routers.definition'))
      .delete();
    const rows: { digest: string; bytes: number | string }[] = await knex('stored_routers')
      .where({ tenant_id: tenantId })
      .orderBy([{ column: 'created_at', order: 'desc' }, 'digest'])
      .select('digest', 'bytes');
    // Newest first, the router just stored before all: from the first that does not fit, every older one goes.
    let total = router.state.length;
    let full = false;
    const evict: string[] = [];
    for (const r of rows) {
      if (r.digest === digest) continue;
      full ||= total + Number(r.bytes) > this.maxBytes;
      if (full) evict.push(r.digest);
      else total += Number(r.bytes);
    }
    for (let i = 0; i < evict.length; i += 500) {
      deleted += await knex('stored_routers')
        .where({ tenant_id: tenantId })
        .whereIn('digest', evict.slice(i, i + 500))
        .delete();
    }
    return { stored: true, deleted };
  }

  /** The bytes of a tenant's stored routers. */
  async tenantBytes(tenantId: string): Promise<number> {
    const r = await this.db
      .knex('stored_routers')
      .where({ tenant_id: tenantId })
      .sum({ total: 'bytes' })
      .first<{ total: number | string | null } | undefined>();
    return Number(r?.total ?? 0);
  }
}
