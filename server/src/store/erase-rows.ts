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
/** Rows updated per statement: few enough bindings for either database. */
const CHUNK = 200;

function chunks<T>(xs: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += CHUNK) out.push(xs.slice(i, i + CHUNK));
  return out;
}

/** `case <column> when k1 then v1 … end`: many rows' new values in one statement, on both databases. */
function caseOf(trx: Knex.Transaction, column: string, rows: { key: string | number; value: string }[]): Knex.Raw {
  return trx.raw(`case ?? ${rows.map(() => 'when ? then ?').join(' ')} end`, [column, ...rows.flatMap((r) => [r.key, r.value])]);
}

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
  const skeletons = audit.map((a) => ({
    key: Number(a.sequence),
    value: JSON.stringify(rules.skeleton(a.type, JSON.parse(a.data) as Record<string, unknown>)),
  }));
  for (const chunk of chunks(skeletons)) {
    await trx('audit_entries')
      .where(where)
      .whereIn(
        'sequence',
        chunk.map((s) => s.key),
      )
      .update({ data: caseOf(trx, 'sequence', chunk), erased_at: now });
  }
  const hooks = await trx('webhook_deliveries').where(where).select('id', 'payload');
  const payloads = hooks.map((h) => ({ key: h.id, value: JSON.stringify(rules.webhookPayload(JSON.parse(h.payload) as Record<string, unknown>)) }));
  for (const chunk of chunks(payloads)) {
    await trx('webhook_deliveries')
      .whereIn(
        'id',
        chunk.map((p) => p.key),
      )
      .update({ payload: caseOf(trx, 'id', chunk) });
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
