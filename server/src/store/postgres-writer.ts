// The converse path's statements on PostgreSQL, each one round trip: named prepared statements
// (parsed and planned once per connection) on a connection from Knex's pool. The write of a
// turn is one statement: data-modifying CTEs update (or insert) the conversation and insert the
// turns, audit entries, event row, webhook outbox rows and idempotency record from JSON arrays
// (json_populate_recordset), each insert guarded by the conversation's update having matched.
// One statement is atomic by itself, so no BEGIN/COMMIT round trips; a refused update writes
// nothing. docs/performance.md has the measurements behind this shape.
import type { Knex } from 'knex';
import { isUniqueViolation } from './db-errors.js';
import { withPooledConnection } from './knex-adapter.js';
import type { AgentTableRow, ConversationTableRow } from './rows.js';
import { CLOSE_UPSERT_TAIL, COLUMNS, INSERT_ONLY_COLUMNS, REVIEW_GROUP_UPSERT_TAIL, STAT_UPSERT_TAIL, type WriteRows } from './turn-rows.js';
import { ConcurrentUpdateError, DuplicateIdempotencyKeyError, type TurnWriter } from './writer.js';

interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }, cb: (err: Error | null, res: { rows: unknown[] }) => void): void;
}

type Table = keyof typeof COLUMNS;

const cols = (table: Table, alias?: string) => COLUMNS[table].map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

/** Inserts the rows of a JSON array parameter, only when the conversation's write (CTE `c`) matched. */
const insertFrom = (table: Table, param: string) =>
  `insert into ${table} (${cols(table)}) select ${cols(table, 'r')} from json_populate_recordset(null::${table}, ${param}::json) r where exists (select 1 from c)`;

/**
 * The inserts that follow the conversation's write, from parameters `$first`…`$first+8`, and the
 * statement's answer: `n`, whether the conversation's write matched, and (`notifyAfter`: the
 * parameter holding the time now) a notice of its new events when an event stream follows the
 * conversation (watched_until, event-log.ts watch).
 */
const rest = (first: number, notifyAfter?: number) => `t as (${insertFrom('turns', `$${first}`)}),
  a as (${insertFrom('audit_entries', `$${first + 1}`)}),
  e as (${insertFrom('conversation_events', `$${first + 2}`)}),
  w as (${insertFrom('webhook_deliveries', `$${first + 3}`)}),
  i as (${insertFrom('idempotency_keys', `$${first + 4}`)}),
  s as (${insertFrom('agent_stats', `$${first + 5}`)} ${STAT_UPSERT_TAIL}),
  d as (${insertFrom('agent_closes', `$${first + 6}`)} ${CLOSE_UPSERT_TAIL}),
  g as (${insertFrom('review_groups', `$${first + 7}`)} ${REVIEW_GROUP_UPSERT_TAIL}),
  o as (${insertFrom('review_occurrences', `$${first + 8}`)})
select (select count(*) from c)::int as n${
  notifyAfter === undefined
    ? ''
    : `,
  (select count(pg_notify('switchboard_events', c.id::text)) from c where c.watched_until >= $${notifyAfter}::text and json_array_length($${first + 2}::json) > 0)::int as told`
}`;

const UPDATABLE = COLUMNS.conversations.filter((c) => !INSERT_ONLY_COLUMNS.includes(c));

// A conversation is found by its primary key alone; its tenant (and agent) are checked as a filter,
// written `(…) is true` so that no index can serve them. A named statement keeps the generic plan
// it made first, often on a table still nearly empty, where the planner rates every index alike:
// it chose the (tenant_id, agent_id, user_id, …) index and then read all of an agent's entries
// for each lookup (60 pages a call in \`npm run bench\`) until an ANALYZE came.
const STATEMENTS = {
  agentBySlug: 'select * from agents where tenant_id = $1 and slug = $2',
  conversationOfAgent: 'select * from conversations where id = $1 and (tenant_id = $2 and agent_id = $3) is true',
  // Both rows as JSON (their columns are text, numbers and booleans, which JSON carries as pg would).
  agentWithConversation: `select to_json(a) as agent,
      (select to_json(c) from conversations c where c.id = $3 and (c.tenant_id = $1 and c.agent_id = a.id) is true) as conversation
    from agents a where a.tenant_id = $1 and a.slug = $2`,
  conversation: 'select * from conversations where id = $1 and (tenant_id = $2) is true',
  // A new holder starts with no waiter marked (leases.ts): waiters still waiting mark the row again.
  takeLease:
    'update conversations set lease_id = $3, lease_until = $4, lease_wanted = false where id = $1 and (tenant_id = $2) is true and (lease_id is null or lease_until < $5) returning *',
  // The same, only while the row has the audit sequence the call read ($6): an optimistic call's (leases.ts).
  takeLeaseAt:
    'update conversations set lease_id = $3, lease_until = $4, lease_wanted = false where id = $1 and (tenant_id = $2) is true and (lease_id is null or lease_until < $5) and audit_seq = $6 returning *',
  // $1 the conversation row, $2…$10 the other tables' rows. Nothing follows a conversation that did
  // not exist: no notice.
  insertTurn: `with c as (
    insert into conversations (${cols('conversations')})
    select ${cols('conversations', 'r')} from json_populate_record(null::conversations, $1::json) r returning id),
  ${rest(2)}`,
  // $1 the conversation row, $2 the audit sequence it must still have, $3 the lease its writer
  // must hold (null: none; the row must then have no live lease at $4, the time now, and the write
  // leaves the lease columns alone; else it releases the lease), $5…$13 the other tables' rows.
  updateTurn: `with c as (
    update conversations t set (${UPDATABLE.join(', ')}, lease_id, lease_until) = (
      select ${UPDATABLE.map((c) => `r.${c}`).join(', ')},
        case when $3::text is null then t.lease_id end, case when $3::text is null then t.lease_until end
      from json_populate_record(null::conversations, $1::json) r)
    where t.id = ($1::json->>'id')::uuid and (t.tenant_id = $1::json->>'tenant_id') is true and t.audit_seq = $2::int
      and (t.lease_id = $3::text or ($3::text is null and (t.lease_id is null or t.lease_until < $4::text)))
    returning t.id, t.watched_until),
  ${rest(5, 4)}`,
} as const;

export class PostgresWriter implements TurnWriter {
  /**
   * `prepared`: run the statements as named prepared statements, parsed and planned once per
   * connection. Off behind a pooler in transaction mode that does not keep them (PgBouncer before
   * 1.21): each is then parsed and planned on every call.
   */
  constructor(
    private readonly knex: Knex,
    private readonly opts: { prepared: boolean } = { prepared: true },
  ) {}

  /** Runs a statement; pg prepares a named one on the connection's first use of the name. */
  private run<T>(name: keyof typeof STATEMENTS, values: unknown[]): Promise<T[]> {
    const query = this.opts.prepared ? { name, text: STATEMENTS[name], values } : { text: STATEMENTS[name], values };
    return withPooledConnection(
      this.knex,
      (conn: PgConnection) =>
        // The callback form: db.ts's time-out guard wraps it.
        new Promise<T[]>((resolve, reject) => {
          conn.query(query, (err, res) => (err ? reject(err) : resolve(res.rows as T[])));
        }),
    );
  }

  async agentBySlug(tenantId: string, slug: string): Promise<AgentTableRow | undefined> {
    return (await this.run<AgentTableRow>('agentBySlug', [tenantId, slug])).at(0);
  }

  async agentWithConversation(tenantId: string, slug: string, conversationId: string): Promise<{ agent?: AgentTableRow; conversation?: ConversationTableRow }> {
    const row = (
      await this.run<{ agent: AgentTableRow; conversation: ConversationTableRow | null }>('agentWithConversation', [tenantId, slug, conversationId])
    ).at(0);
    return row ? { agent: row.agent, conversation: row.conversation ?? undefined } : {};
  }

  async conversation(tenantId: string, agentId: string | null, id: string): Promise<ConversationTableRow | undefined> {
    const rows = agentId
      ? await this.run<ConversationTableRow>('conversationOfAgent', [id, tenantId, agentId])
      : await this.run<ConversationTableRow>('conversation', [id, tenantId]);
    return rows.at(0);
  }

  async takeLease(
    ref: { tenantId: string; id: string },
    lease: { id: string; until: string; now: string; auditSeq?: number },
  ): Promise<ConversationTableRow | undefined> {
    const values = [ref.id, ref.tenantId, lease.id, lease.until, lease.now];
    const rows =
      lease.auditSeq === undefined
        ? await this.run<ConversationTableRow>('takeLease', values)
        : await this.run<ConversationTableRow>('takeLeaseAt', [...values, lease.auditSeq]);
    return rows.at(0);
  }

  async commit(w: WriteRows, lease: { id: string } | null): Promise<void> {
    const others = [w.turns, w.audit, w.events, w.webhooks, w.idempotency ? [w.idempotency] : [], w.stats, w.closes, w.reviewGroups, w.reviewOccurrences].map(
      (rows) => JSON.stringify(rows),
    );
    const row = JSON.stringify(w.conversation);
    try {
      const result = w.isNew
        ? await this.run<{ n: number }>('insertTurn', [row, ...others])
        : await this.run<{ n: number }>('updateTurn', [row, w.expectedAuditSeq, lease?.id ?? null, new Date().toISOString(), ...others]);
      if (result.at(0)?.n !== 1) throw new ConcurrentUpdateError(`conversation ${w.conversation.id} changed underneath this turn`);
    } catch (err) {
      if (isUniqueViolation(err) && (err as { table?: string }).table === 'idempotency_keys') throw new DuplicateIdempotencyKeyError();
      throw err;
    }
  }
}
