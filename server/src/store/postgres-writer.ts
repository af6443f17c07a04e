// The converse path's statements on PostgreSQL, through Knex. The pg driver prepares nothing
// Knex does not, and a round trip dominates a statement's cost there, so each statement is one
// query and the commit one transaction.
import type { Knex } from 'knex';
import { isUniqueViolation } from './db-errors.js';
import type { AgentTableRow, ConversationTableRow } from './rows.js';
import type { WriteRows } from './turn-rows.js';
import { ConcurrentUpdateError, DuplicateIdempotencyKeyError, type TurnWriter } from './writer.js';

export class PostgresWriter implements TurnWriter {
  constructor(private readonly knex: Knex) {}

  async agentBySlug(tenantId: string, slug: string): Promise<AgentTableRow | undefined> {
    return this.knex<AgentTableRow>('agents').where({ tenant_id: tenantId, slug }).first();
  }

  async conversation(tenantId: string, agentId: string | null, id: string): Promise<ConversationTableRow | undefined> {
    const q = this.knex<ConversationTableRow>('conversations').where({ id, tenant_id: tenantId }).first();
    if (agentId) q.andWhere({ agent_id: agentId });
    return q;
  }

  commit(rows: WriteRows, lease: { id: string } | null): Promise<void> {
    return this.knex.transaction((trx) => write(trx, rows, lease));
  }
}

async function write(trx: Knex.Transaction, w: WriteRows, lease: { id: string } | null): Promise<void> {
  if (w.isNew) {
    await trx('conversations').insert(w.conversation);
  } else {
    const { id, tenant_id, agent_id: _agent, created_at: _created, ...changes } = w.conversation;
    const q = trx('conversations').where({ id, tenant_id, audit_seq: w.expectedAuditSeq });
    // Only the holder of the lease may write, and its write releases the lease.
    if (lease) q.andWhere({ lease_id: lease.id });
    const n = await q.update(lease ? { ...changes, lease_id: null, lease_until: null } : changes);
    if (n !== 1) throw new ConcurrentUpdateError(`conversation ${id} changed underneath this turn`);
  }
  if (w.turns.length) await trx('turns').insert(w.turns);
  if (w.audit.length) await trx('audit_entries').insert(w.audit);
  // A trigger announces the row to every listening process when this commits.
  if (w.events.length) await trx('conversation_events').insert(w.events);
  if (w.webhooks.length) await trx('webhook_deliveries').insert(w.webhooks);
  if (w.idempotency) {
    try {
      await trx('idempotency_keys').insert(w.idempotency);
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateIdempotencyKeyError();
      throw err;
    }
  }
}
