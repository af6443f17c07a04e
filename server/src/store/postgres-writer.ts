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
  query(config: { name: string; text: string; values: unknown[] }, cb: (err: Error | null, res: { rows: unknown[] }) => void): void;
}

type Table = keyof typeof COLUMNS;

const cols = (table: Table, alias?: string) => COLUMNS[table].map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

/** Inserts the rows of a JSON array parameter, only when the conversation's write (CTE `c`) matched. */
const insertFrom = (table: Table, param: string) =>
  `insert into ${table} (${cols(table)}) select ${cols(table, 'r')} from json_populate_recordset(null::${table}, ${param}::json) r where exists (select 1 from c)`;

/** The inserts that follow the conversation's write, from parameters `$first`…`$first+8`. */
const rest = (first: number) => `t as (${insertFrom('turns', `$${first}`)}),
  a as (${insertFrom('audit_entries', `$${first + 1}`)}),
  e as (${insertFrom('conversation_events', `$${first + 2}`)}),
  w as (${insertFrom('webhook_deliveries', `$${first + 3}`)}),
  i as (${insertFrom('idempotency_keys', `$${first + 4}`)}),
  s as (${insertFrom('agent_stats', `$${first + 5}`)} ${STAT_UPSERT_TAIL}),
  d as (${insertFrom('agent_closes', `$${first + 6}`)} ${CLOSE_UPSERT_TAIL}),
  g as (${insertFrom('review_groups', `$${first + 7}`)} ${REVIEW_GROUP_UPSERT_TAIL}),
  o as (${insertFrom('review_occurrences', `$${first + 8}`)})
select count(*)::int as n from c`;

const UPDATABLE = COLUMNS.conversations.filter((c) => !INSERT_ONLY_COLUMNS.includes(c));

const STATEMENTS = {
  agentBySlug: 'select * from agents where tenant_id = $1 and slug = $2',
  conversationOfAgent: 'select * from conversations where id = $1 and tenant_id = $2 and agent_id = $3',
  conversation: 'select * from conversations where id = $1 and tenant_id = $2',
  takeLease: 'update conversations set lease_id = $3, lease_until = $4 where id = $1 and tenant_id = $2 and (lease_id is null or lease_until < $5) returning *',
  // $1 the conversation row, $2…$10 the other tables' rows.
  insertTurn: `with c as (
    insert into conversations (${cols('conversations')})
    select ${cols('conversations', 'r')} from json_populate_record(null::conversations, $1::json) r returning id),
  ${rest(2)}`,
  // $1 the conversation row, $2 the audit sequence it must still have, $3 the lease its writer
  // must hold (null: none; the write then leaves the lease columns alone, else releases the
  // lease), $4…$12 the other tables' rows.
  updateTurn: `with c as (
    update conversations t set (${UPDATABLE.join(', ')}, lease_id, lease_until) = (
      select ${UPDATABLE.map((c) => `r.${c}`).join(', ')},
        case when $3::text is null then t.lease_id end, case when $3::text is null then t.lease_until end
      from json_populate_record(null::conversations, $1::json) r)
    where t.id = ($1::json->>'id')::uuid and t.tenant_id = $1::json->>'tenant_id' and t.audit_seq = $2::int
      and ($3::text is null or t.lease_id = $3::text)
    returning t.id),
  ${rest(4)}`,
} as const;

export class PostgresWriter implements TurnWriter {
  constructor(private readonly knex: Knex) {}

  /** Runs a named statement; pg prepares it on the connection's first use of the name. */
  private run<T>(name: keyof typeof STATEMENTS, values: unknown[]): Promise<T[]> {
    return withPooledConnection(
      this.knex,
      (conn: PgConnection) =>
        // The callback form: db.ts's time-out guard wraps it.
        new Promise<T[]>((resolve, reject) => {
          conn.query({ name, text: STATEMENTS[name], values }, (err, res) => (err ? reject(err) : resolve(res.rows as T[])));
        }),
    );
  }

  async agentBySlug(tenantId: string, slug: string): Promise<AgentTableRow | undefined> {
    return (await this.run<AgentTableRow>('agentBySlug', [tenantId, slug])).at(0);
  }

  async conversation(tenantId: string, agentId: string | null, id: string): Promise<ConversationTableRow | undefined> {
    const rows = agentId
      ? await this.run<ConversationTableRow>('conversationOfAgent', [id, tenantId, agentId])
      : await this.run<ConversationTableRow>('conversation', [id, tenantId]);
    return rows.at(0);
  }

  async takeLease(ref: { tenantId: string; id: string }, lease: { id: string; until: string; now: string }): Promise<ConversationTableRow | undefined> {
    return (await this.run<ConversationTableRow>('takeLease', [ref.id, ref.tenantId, lease.id, lease.until, lease.now])).at(0);
  }

  async commit(w: WriteRows, lease: { id: string } | null): Promise<void> {
    const others = [w.turns, w.audit, w.events, w.webhooks, w.idempotency ? [w.idempotency] : [], w.stats, w.closes, w.reviewGroups, w.reviewOccurrences].map(
      (rows) => JSON.stringify(rows),
    );
    const row = JSON.stringify(w.conversation);
    try {
      const result = w.isNew
        ? await this.run<{ n: number }>('insertTurn', [row, ...others])
        : await this.run<{ n: number }>('updateTurn', [row, w.expectedAuditSeq, lease?.id ?? null, ...others]);
      if (result.at(0)?.n !== 1) throw new ConcurrentUpdateError(`conversation ${w.conversation.id} changed underneath this turn`);
    } catch (err) {
      if (isUniqueViolation(err) && (err as { table?: string }).table === 'idempotency_keys') throw new DuplicateIdempotencyKeyError();
      throw err;
    }
  }
}
