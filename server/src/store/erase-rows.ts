// The erasure of one conversation, in the transaction the dialect's secureErase gives it.
import type { Knex } from 'knex';
import type { Conversation, ErasureRules } from '../domain.js';
import { auditRows } from './turn-rows.js';
import { ConcurrentUpdateError } from './writer.js';

/**
 * Erases what a conversation says about a person: its turns, slots, action results, context,
 * user id, event log and idempotency records; audit entries and webhook payloads keep what
 * the rules say, marked with the erasure time, and a chained `erasure` entry records which
 * entries it reduced.
 * The dialect's secureErase leaves nothing of it in free pages or a write-ahead log.
 */
export async function eraseConversationRows(
  trx: Knex.Transaction,
  e: { conversation: Conversation; now: string; rules: ErasureRules },
  lease: { id: string } | null,
): Promise<void> {
  const { conversation: c, now, rules } = e;
  const where = { conversation_id: c.id, tenant_id: c.tenantId };
  await trx('turns').where(where).delete();
  await trx('conversation_events').where(where).delete();
  const audit = await trx('audit_entries').where(where).whereIn('type', rules.auditTypes).select('sequence', 'type', 'data');
  for (const a of audit) {
    const skeleton = rules.skeleton(a.type, JSON.parse(a.data) as Record<string, unknown>);
    await trx('audit_entries')
      .where({ ...where, sequence: a.sequence })
      .update({ data: JSON.stringify(skeleton), erased_at: now });
  }
  const hooks = await trx('webhook_deliveries').where(where).select('id', 'payload');
  for (const h of hooks) {
    await trx('webhook_deliveries')
      .where({ id: h.id })
      .update({ payload: JSON.stringify(rules.webhookPayload(JSON.parse(h.payload) as Record<string, unknown>)) });
  }
  await trx('idempotency_keys').where({ tenant_id: c.tenantId, conversation_id: c.id }).delete();
  const record = auditRows({
    conversation: c,
    isNew: false,
    expectedAuditSeq: c.auditSeq,
    previousAuditHash: c.auditHash,
    turns: [],
    audit: [{ type: 'erasure', turnIndex: null, timestamp: now, durationMs: null, data: { erased_at: now, through_sequence: c.auditSeq } }],
    requestId: `erasure:${now}`,
  });
  await trx('audit_entries').insert(record.rows);
  const n = await trx('conversations')
    .where({ id: c.id, tenant_id: c.tenantId, audit_seq: c.auditSeq })
    .update({
      user_id: null,
      context: null,
      state: JSON.stringify({ slots: {}, actions: {}, attempts: c.flow.attempts, wait: c.flow.wait }),
      erased_at: now,
      updated_at: now,
      audit_seq: c.auditSeq + 1,
      audit_hash: record.head,
      ...(lease ? { lease_id: null, lease_until: null } : {}),
    });
  if (n !== 1) throw new ConcurrentUpdateError(`conversation ${c.id} changed underneath its erasure`);
}
