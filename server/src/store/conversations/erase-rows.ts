// The erasure of conversations, set-based: a batch of conversations costs the same dozen
// statements as one, in the transaction the dialect's secureErase gives it.
import type { Knex } from 'knex';
import type { AuditType } from '@switchboard/contract';
import type { Conversation, ErasureRules } from '../../domain.js';
import type { DialectAdapter } from '../dialects.js';
import { conversationHistory } from '../partitions.js';
import { auditRows } from '../writer/turn-rows.js';
import { ConcurrentUpdateError } from '../writer/writer.js';
import { canonicalJson, sha256 } from '../../lib/canonical.js';

/**
 * Erases what conversations say about a person: their turns, slots, action results, context,
 * user id, event log and idempotency records; audit entries, webhook payloads and replay results keep what
 * the rules say, marked with the erasure time; their review-inbox occurrences are deleted (a group
 * left with none leaves the inbox), and the words a reviewer acted on leave every copy
 * (eraseReviewedWords); a chained `erasure` entry in each
 * conversation records which entries it reduced.
 * The dialect's secureErase leaves nothing of it in free pages or a write-ahead log.
 * `leased`: the conversations' leases are released with the update.
 * All conversations belong to one tenant; a conversation whose audit sequence moved since it was
 * read fails the whole batch (ConcurrentUpdateError).
 */
/**
 * Rows per JSON array bound to one statement: keeps each statement's parameter within a few MB.
 * Each `update … from` reads its array once into a materialized relation: without that, SQLite
 * evaluates the JSON again for every row it updates.
 */
const CHUNK = 1000;

function chunks<T>(xs: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += CHUNK) out.push(xs.slice(i, i + CHUNK));
  return out;
}

export async function eraseConversationRows(
  trx: Knex.Transaction,
  dialect: DialectAdapter,
  e: { conversations: Conversation[]; now: string; rules: ErasureRules; leased: boolean; chainKey?: Buffer },
): Promise<void> {
  const { conversations, now, rules, leased } = e;
  if (conversations.length === 0) return;
  const tenantId = conversations[0].tenantId;
  if (conversations.some((c) => c.tenantId !== tenantId)) throw new Error('one erasure batch holds one tenant');
  const ids = conversations.map((c) => c.id);
  // The history is read from the months since the oldest of them began (partitions.ts).
  const oldest = conversations.reduce((a, c) => (c.createdAt < a ? c.createdAt : a), conversations[0].createdAt);
  const mine = (table: 'turns' | 'conversation_events') => conversationHistory(trx, table, oldest).where('tenant_id', tenantId).whereIn('conversation_id', ids);

  await mine('turns').delete();
  await mine('conversation_events').delete();
  await trx('idempotency_keys').where('tenant_id', tenantId).whereIn('conversation_id', ids).delete();

  const audit: { conversation_id: string; sequence: number | string; type: AuditType; data: string }[] = await conversationHistory(trx, 'audit_entries', oldest)
    .where('tenant_id', tenantId)
    .whereIn('conversation_id', ids)
    .whereIn('type', rules.auditTypes)
    .select('conversation_id', 'sequence', 'type', 'data');
  for (const chunk of chunks(audit)) {
    const rows = chunk.map((a) => ({
      conversation_id: a.conversation_id,
      sequence: Number(a.sequence),
      data: JSON.stringify(rules.skeleton(a.type, JSON.parse(a.data) as Record<string, unknown>)),
    }));
    await trx.raw(
      `with v as materialized (${dialect.jsonRows('audit_entries', ['conversation_id', 'sequence', 'data'])})
       update audit_entries as a set data = v.data, erased_at = ? from v
       where a.tenant_id = ? and a.conversation_id = v.conversation_id and a.sequence = v.sequence`,
      [JSON.stringify(rows), now, tenantId],
    );
  }

  const hooks = await trx('webhook_deliveries').where('tenant_id', tenantId).whereIn('conversation_id', ids).select('id', 'payload');
  for (const chunk of chunks(hooks)) {
    const rows = chunk.map((h) => ({ id: h.id, payload: JSON.stringify(rules.webhookPayload(JSON.parse(h.payload) as Record<string, unknown>)) }));
    await trx.raw(
      `with v as materialized (${dialect.jsonRows('webhook_deliveries', ['id', 'payload'])})
       update webhook_deliveries as w set payload = v.payload from v
       where w.tenant_id = ? and w.id = v.id`,
      [JSON.stringify(rows), tenantId],
    );
  }

  // Channels: replies not yet sent are dropped with their text; the channel user (a phone number,
  // a chat id) and the messages' payloads go (processed messages keep only their provider id,
  // which redeliveries are recognised by).
  await trx('channel_deliveries')
    .where('tenant_id', tenantId)
    .whereIn('conversation_id', ids)
    .update({ calls: null, user_key: 'erased', status: trx.raw("case when status = 'pending' then 'failed' else status end"), next_attempt_at: null });
  await trx('channel_users').where('tenant_id', tenantId).whereIn('conversation_id', ids).delete();
  await trx('channel_inbound').where('tenant_id', tenantId).whereIn('conversation_id', ids).update({ payload: null, user_key: 'erased' });

  // Replays kept for a week hold what the erased conversations said where a version answered otherwise.
  const erased = new Set(ids);
  const replays = await trx('replays')
    .where('tenant_id', tenantId)
    .whereIn('agent_id', [...new Set(conversations.map((c) => c.agentId))])
    .select('id', 'results');
  for (const r of replays as { id: string; results: string }[]) {
    const results = JSON.parse(r.results) as Record<string, unknown>[];
    if (!results.some((x) => erased.has(x.conversation_id as string))) continue;
    const kept = results.map((x) => (erased.has(x.conversation_id as string) ? rules.replayResult(x) : x));
    await trx('replays')
      .where({ tenant_id: tenantId, id: r.id })
      .update({ results: JSON.stringify(kept) });
  }

  await eraseReviewedWords(trx, tenantId, ids);
  await eraseReviewOccurrences(trx, tenantId, ids);

  const next = conversations.map((c) => {
    const record = auditRows(
      {
        conversation: c,
        isNew: false,
        expectedAuditSeq: c.auditSeq,
        previousAuditHash: c.auditHash,
        turns: [],
        audit: [{ type: 'erasure', turnIndex: null, timestamp: now, durationMs: null, data: { erased_at: now, through_sequence: c.auditSeq } }],
        requestId: `erasure:${now}`,
      },
      e.chainKey,
    );
    const state = JSON.stringify({ slots: {}, actions: {}, attempts: c.flow.attempts, wait: c.flow.wait });
    return { entries: record.rows, row: { id: c.id, audit_seq: c.auditSeq, audit_hash: record.head, state } };
  });
  for (const chunk of chunks(next.flatMap((n) => n.entries))) await trx('audit_entries').insert(chunk);

  let updated = 0;
  for (const chunk of chunks(next.map((n) => n.row))) {
    // `audit_seq` carries the sequence each conversation must still have; the update moves it one
    // on. The id list lets SQLite's planner drive the update from the primary key.
    const result: unknown = await trx.raw(
      `with v as materialized (${dialect.jsonRows('conversations', ['id', 'audit_seq', 'audit_hash', 'state'])})
       update conversations as t set user_id = null, context = null, page_url = null, state = v.state, erased_at = ?, updated_at = ?,
         audit_seq = v.audit_seq + 1, audit_hash = v.audit_hash${leased ? ', lease_id = null, lease_until = null' : ''}
       from v
       where t.tenant_id = ? and t.id in (${chunk.map(() => '?').join(', ')}) and t.id = v.id and t.audit_seq = v.audit_seq`,
      [JSON.stringify(chunk), now, now, tenantId, ...chunk.map((r) => r.id)],
    );
    updated += dialect.changedRows(result);
  }
  if (updated !== conversations.length) throw new ConcurrentUpdateError('a conversation changed underneath its erasure');
}

/** Deletes the conversations' review-inbox occurrences and counts their open groups again; a group left empty is deleted. */
async function eraseReviewOccurrences(trx: Knex.Transaction, tenantId: string, ids: string[]): Promise<void> {
  const touched: { agent_id: string; group_key: string }[] = await trx('review_occurrences')
    .where('tenant_id', tenantId)
    .whereIn('conversation_id', ids)
    .whereNull('acted_group')
    .distinct('agent_id', 'group_key');
  await trx('review_occurrences').where('tenant_id', tenantId).whereIn('conversation_id', ids).delete();
  const byAgent = new Map<string, string[]>();
  for (const t of touched) byAgent.set(t.agent_id, [...(byAgent.get(t.agent_id) ?? []), t.group_key]);
  for (const [agentId, keys] of byAgent) {
    for (const chunk of chunks(keys)) {
      const open = () => trx('review_groups').where({ tenant_id: tenantId, agent_id: agentId }).whereIn('open_key', chunk);
      await open().update({
        count: trx.raw(
          `(select count(*) from review_occurrences o where o.tenant_id = review_groups.tenant_id and o.agent_id = review_groups.agent_id
            and o.group_key = review_groups.group_key and o.acted_group is null)`,
        ),
      });
      await open().where('count', 0).delete();
    }
  }
}

/**
 * The words of the conversations' messages a reviewer acted on (a review group's `example`) leave
 * every copy the action made: the acted group keeps its action without them (`erased: true`);
 * drafts of its agent, versions never made current nor given a split, lose the example from
 * their capabilities' examples and out-of-scope messages (their digest is computed again, and a
 * stored router of the old digest no version uses any more is deleted); evaluations' labelled
 * sets and confused examples have the text emptied. Versions a release step names keep theirs:
 * they are the agent's definition as released and named by digest in its release record.
 */
async function eraseReviewedWords(trx: Knex.Transaction, tenantId: string, ids: string[]): Promise<void> {
  const groupIds = new Set<string>();
  for (const chunk of chunks(ids)) {
    const rows: { acted_group: string }[] = await trx('review_occurrences')
      .where('tenant_id', tenantId)
      .whereIn('conversation_id', chunk)
      .whereNotNull('acted_group')
      .distinct('acted_group');
    for (const r of rows) groupIds.add(r.acted_group);
  }
  if (!groupIds.size) return;
  const words = new Map<string, Set<string>>(); // agent → example texts
  for (const chunk of chunks([...groupIds])) {
    const groups: { id: string; agent_id: string; action: string | null }[] = await trx('review_groups')
      .where('tenant_id', tenantId)
      .whereIn('id', chunk)
      .select('id', 'agent_id', 'action');
    for (const g of groups) {
      const action = g.action ? (JSON.parse(g.action) as Record<string, unknown>) : null;
      if (!action || typeof action.example !== 'string') continue;
      const { example, ...kept } = action;
      words.set(g.agent_id, (words.get(g.agent_id) ?? new Set()).add(example));
      await trx('review_groups')
        .where({ tenant_id: tenantId, id: g.id })
        .update({ action: JSON.stringify({ ...kept, erased: true }) });
    }
  }
  for (const [agentId, said] of words) {
    await eraseFromDrafts(trx, tenantId, agentId, said);
    await eraseFromEvaluations(trx, tenantId, agentId, said);
  }
}

async function eraseFromDrafts(trx: Knex.Transaction, tenantId: string, agentId: string, said: Set<string>): Promise<void> {
  const agent: { current_version: number | string; split_version: number | string | null } | undefined = await trx('agents')
    .where({ tenant_id: tenantId, id: agentId })
    .first('current_version', 'split_version');
  if (!agent) return;
  const released = new Set<number>([Number(agent.current_version), ...(agent.split_version === null ? [] : [Number(agent.split_version)])]);
  const stepped: { version: number | string }[] = await trx('release_records').where({ tenant_id: tenantId, agent_id: agentId }).distinct('version');
  for (const r of stepped) released.add(Number(r.version));
  const versions: { version: number | string; digest: string; definition: string }[] = await trx('agent_versions')
    .where({ tenant_id: tenantId, agent_id: agentId })
    .whereNotIn('version', [...released])
    .select('version', 'digest', 'definition');
  const keep = (e: unknown) => typeof e !== 'string' || !said.has(e);
  for (const v of versions) {
    const def = JSON.parse(v.definition) as { capabilities?: { examples?: unknown[] }[]; routing?: { out_of_scope?: unknown[] } };
    let changed = false;
    for (const cap of def.capabilities ?? []) {
      if (Array.isArray(cap.examples) && !cap.examples.every(keep)) {
        cap.examples = cap.examples.filter(keep);
        changed = true;
      }
    }
    if (Array.isArray(def.routing?.out_of_scope) && !def.routing.out_of_scope.every(keep)) {
      def.routing.out_of_scope = def.routing.out_of_scope.filter(keep);
      changed = true;
    }
    if (!changed) continue;
    // The digest as agent-service.ts computes it for a definition put.
    const digest = sha256(canonicalJson(def));
    await trx('agent_versions')
      .where({ tenant_id: tenantId, agent_id: agentId, version: v.version })
      .update({ definition: JSON.stringify(def), digest });
    const used = await trx('agent_versions').where({ tenant_id: tenantId, digest: v.digest }).first('version');
    if (!used) await trx('stored_routers').where({ tenant_id: tenantId, digest: v.digest }).delete();
  }
}

async function eraseFromEvaluations(trx: Knex.Transaction, tenantId: string, agentId: string, said: Set<string>): Promise<void> {
  const rows: { id: string; result: string }[] = await trx('evaluations')
    .where({ tenant_id: tenantId, agent_id: agentId })
    .whereNotNull('result')
    .select('id', 'result');
  for (const r of rows) {
    const hit = { changed: false };
    const result = JSON.parse(r.result, (key, value: unknown) => {
      if (key === 'message' && typeof value === 'string' && said.has(value)) {
        hit.changed = true;
        return '';
      }
      if (key === 'messages' && Array.isArray(value) && value.some((m) => typeof m === 'string' && said.has(m))) {
        hit.changed = true;
        return value.map((m: unknown) => (typeof m === 'string' && said.has(m) ? '' : m));
      }
      return value;
    }) as unknown;
    if (hit.changed)
      await trx('evaluations')
        .where({ tenant_id: tenantId, id: r.id })
        .update({ result: JSON.stringify(result) });
  }
}
