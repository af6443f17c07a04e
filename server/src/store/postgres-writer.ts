// The converse path's statements on PostgreSQL, each one round trip: named prepared statements
// (parsed and planned once per connection) on a connection from Knex's pool. The write of a
// turn is one statement: data-modifying CTEs update (or insert) the conversation and insert the
// turns, audit entries, event row, webhook outbox rows and idempotency record from JSON arrays
// (json_populate_recordset), each insert guarded by the conversation's update having matched;
// a table the turn has no rows for has no insert in the statement (one statement per shape).
// One statement is atomic by itself, so no BEGIN/COMMIT round trips; a refused update writes
// nothing. The writes that reach the writer within one turn of the event loop share a statement
// (batchStatement), each still applied or refused on its own conditions. docs/performance.md has
// the measurements behind these shapes.
import type { Knex } from 'knex';
import { isUniqueViolation } from './db-errors.js';
import { withPooledConnection } from './knex-adapter.js';
import type { AgentTableRow, ConversationTableRow } from './rows.js';
import { STAT_COUNTERS } from '../domain.js';
import {
  CLOSE_KEY,
  CLOSE_UPSERT_TAIL,
  COLUMNS,
  INSERT_ONLY_COLUMNS,
  REVIEW_GROUP_UPSERT_TAIL,
  STAT_KEY,
  STAT_UPSERT_TAIL,
  type WriteRows,
} from './turn-rows.js';
import { KeptRows } from './kept-rows.js';
import { ConcurrentUpdateError, DuplicateIdempotencyKeyError, StaleRead, type TurnWriter } from './writer.js';

interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }, cb: (err: Error | null, res: { rows: unknown[] }) => void): void;
}

type Table = keyof typeof COLUMNS;

const cols = (table: Table, alias?: string) => COLUMNS[table].map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

/** Inserts the rows of a JSON array parameter, only when the conversation's write (CTE `c`) matched. */
const insertFrom = (table: Table, param: string) =>
  `insert into ${table} (${cols(table)}) select ${cols(table, 'r')} from json_populate_recordset(null::${table}, ${param}::json) r where exists (select 1 from c)`;

/** The tables a turn's write may insert into after the conversation's, in WriteRows' order. */
const FOLLOWING = [
  'turns',
  'audit_entries',
  'conversation_events',
  'webhook_deliveries',
  'idempotency_keys',
  'agent_stats',
  'agent_closes',
  'review_groups',
  'review_occurrences',
] as const satisfies readonly Table[];
type Following = (typeof FOLLOWING)[number];

const UPSERT_TAILS: Partial<Record<Following, string>> = {
  agent_stats: STAT_UPSERT_TAIL,
  agent_closes: CLOSE_UPSERT_TAIL,
  review_groups: REVIEW_GROUP_UPSERT_TAIL,
};

/** An answer column that notifies the event streams following the conversations written (`c`), marked as followed at `now`. */
const notifyWatched = (now: string) =>
  `,\n  (select count(pg_notify('switchboard_events', c.id::text)) from c where c.watched_until >= ${now}::text)::int as told`;

/**
 * The inserts that follow the conversation's write, one for each table of `present` (from
 * parameters `$first`…), and the statement's answer: `version`, the new row's version (null: the
 * conversation's write matched nothing), and (`notifyAfter`: the parameter holding the time now) a notice of its new events when
 * an event stream follows the conversation (watched_until, event-log.ts watch). A table with no
 * rows in this write has no insert at all: each insert costs the executor its start-up and
 * run whether or not its array is empty, and most turns fill four of the nine.
 */
function rest(present: readonly Following[], first: number, notifyAfter?: number, answer = ''): string {
  const inserts = present.map((table, i) => `,\n  x${i} as (${insertFrom(table, `$${first + i}`)}${UPSERT_TAILS[table] ? ` ${UPSERT_TAILS[table]}` : ''})`);
  const events = present.indexOf('conversation_events');
  const notify = notifyAfter === undefined || events < 0 ? '' : notifyWatched(`$${notifyAfter}`);
  return `${inserts.join('')}\nselect (select xmin::text from c) as version${notify}${answer}`;
}

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
  // The same on a row this process kept (kept-rows.ts): only while it is still the version kept ($7) and its agent is live.
  takeLeaseKept: `update conversations t set lease_id = $3, lease_until = $4, lease_wanted = false
    where t.id = $1 and (t.tenant_id = $2) is true and (t.lease_id is null or t.lease_until < $5) and t.audit_seq = $6 and t.xmin = $7::xid
      and exists (select 1 from agents a where a.id = t.agent_id and a.archived_at is null) returning t.*`,
} as const;

/**
 * A turn's write for the tables `present` (see rest): $1 the conversation row, then one parameter
 * for each table's rows. An update: $2 the audit sequence the row must still have, $3 the lease
 * its writer must hold (null: none; the row must then have no live lease at $4, the time now, and
 * the write leaves the lease columns alone; else it releases the lease), the tables' rows from $5.
 * `kept`: the call worked from a row this process kept (kept-rows.ts): $5 is that row's version,
 * which the stored row must still be, with its agent live, and the tables' rows are from $6; a
 * refused write answers with the current rows. Every write answers with the new row's version.
 * Nothing follows a conversation that did not exist: an insert sends no notice.
 */
function turnStatement(isNew: boolean, present: readonly Following[], kept: boolean): string {
  if (isNew)
    return `with c as (
    insert into conversations (${cols('conversations')})
    select ${cols('conversations', 'r')} from json_populate_record(null::conversations, $1::json) r returning id, xmin)${rest(present, 2)}`;
  const p = { row: '$1', seq: '$2', lease: '$3', now: '$4' };
  const [current, agent] = currentRows(p.row);
  return `with c as (
    ${conversationUpdate(p, kept ? `t.xmin = $5::xid and ${AGENT_LIVE}` : 'true')}
    returning t.id, t.watched_until, t.xmin)${rest(
      present,
      kept ? 6 : 5,
      4,
      `,
  (select watched_until from c) as watched_until` +
        (kept
          ? `,
  case when not exists (select 1 from c) then ${current} end as current,
  case when not exists (select 1 from c) then ${agent} end as current_agent`
          : ''),
    )}`;
}

/** The kept rows' condition beside their version: the conversation's agent is live. */
const AGENT_LIVE = 'exists (select 1 from agents a where a.id = t.agent_id and a.archived_at is null)';

/**
 * The update of a turn's conversation from the row in parameter `p.row`, only while the stored
 * row has the audit sequence `p.seq` and the lease `p.lease` (null: none live at `p.now`, and the
 * lease columns are left alone; else the update releases it), and `extra` holds.
 */
function conversationUpdate(p: { row: string; seq: string; lease: string; now: string }, extra: string): string {
  return `update conversations t set (${UPDATABLE.join(', ')}, lease_id, lease_until) = (
      select ${UPDATABLE.map((c) => `r.${c}`).join(', ')},
        case when ${p.lease}::text is null then t.lease_id end, case when ${p.lease}::text is null then t.lease_until end
      from json_populate_record(null::conversations, ${p.row}::json) r)
    where t.id = (${p.row}::json->>'id')::uuid and (t.tenant_id = ${p.row}::json->>'tenant_id') is true and t.audit_seq = ${p.seq}::int
      and (t.lease_id = ${p.lease}::text or (${p.lease}::text is null and (t.lease_id is null or t.lease_until < ${p.now}::text)))
      and ${extra}`;
}

/** The stored conversation and agent rows of the conversation row in parameter `row`, as JSON: a refused kept write's answer. */
const currentRows = (row: string) =>
  [
    `(select to_json(x) from conversations x where x.id = (${row}::json->>'id')::uuid and (x.tenant_id = ${row}::json->>'tenant_id') is true)`,
    `(select to_json(a) from agents a where a.id = (${row}::json->>'agent_id')::uuid)`,
  ] as const;

/** The tables a batch of turn writes may fill: none of them is refused by another write of the batch. */
const BATCHED: readonly Following[] = ['turns', 'audit_entries', 'conversation_events', 'webhook_deliveries', 'agent_stats', 'agent_closes'];

/** Counter tables: a batch adds up its writes' rows of one key first, since one insert may not update a row twice. */
const SUMMED: Partial<Record<Following, { key: readonly string[]; counters: readonly string[] }>> = {
  agent_stats: { key: STAT_KEY, counters: STAT_COUNTERS },
  agent_closes: { key: CLOSE_KEY, counters: ['n'] },
};

/**
 * The write of `size` turns of different conversations in one statement: each conversation's
 * write as a CTE of its own (`c0`, `c1`, …). For continuing conversations (`isNew` false) each is
 * the update of the single write, found by its primary key, with parameters from $2, four a
 * write: its row, the audit sequence it must still have, its lease (or null), and its kept row's
 * version (or null: not kept); $1 is the time now. For new conversations each is the insert of
 * its row, one parameter a write from $1. Each table's rows come in one parameter after those, an
 * array of each write's array, and only the rows of the writes whose conversation's write matched
 * are inserted. The answer has, for each write `k`, the new row's version `v<k>` (null: refused),
 * and for an update `w<k>` whether an event stream follows it and for a refused kept write the
 * current rows (`cur<k>`, `agent<k>`).
 */
export function batchStatement(size: number, present: readonly Following[], isNew: boolean): string {
  const item = (k: number) => ({ row: `$${2 + 4 * k}`, seq: `$${3 + 4 * k}`, lease: `$${4 + 4 * k}`, now: '$1', version: `$${5 + 4 * k}` });
  const ks = [...Array(size).keys()];
  const writes = ks.map((k) => {
    if (isNew)
      // The padding's row ({}) is no conversation.
      return `c${k} as (
    insert into conversations (${cols('conversations')})
    select ${cols('conversations', 'r')} from json_populate_record(null::conversations, $${k + 1}::json) r where $${k + 1}::json->>'id' is not null
    returning ${k} as i, id, null::text as watched_until, xmin)`;
    const p = item(k);
    return `c${k} as (
    ${conversationUpdate(p, `(${p.version}::text is null or (t.xmin = ${p.version}::text::xid and ${AGENT_LIVE}))`)}
    returning ${k} as i, t.id, t.watched_until, t.xmin)`;
  });
  const first = isNew ? size + 1 : 2 + 4 * size;
  const inserts = present.map((table, j) => {
    const from = `json_array_elements($${first + j}::json) with ordinality e(rows, i) cross join lateral json_populate_recordset(null::${table}, e.rows) r
    where e.i - 1 in (select i from c)`;
    const summed = SUMMED[table];
    const select = summed
      ? `select ${summed.key.map((c) => `r.${c}`).join(', ')}, ${summed.counters.map((c) => `sum(r.${c})`).join(', ')} from ${from}
    group by ${summed.key.map((c) => `r.${c}`).join(', ')}`
      : `select ${cols(table, 'r')} from ${from}`;
    const columns = summed ? [...summed.key, ...summed.counters].join(', ') : cols(table);
    return `x${j} as (insert into ${table} (${columns}) ${select}${UPSERT_TAILS[table] ? ` ${UPSERT_TAILS[table]}` : ''})`;
  });
  const answers = ks.map((k) => {
    if (isNew) return `(select xmin::text from c${k}) as v${k}`;
    const p = item(k);
    const refused = `${p.version}::text is not null and not exists (select 1 from c${k})`;
    const [current, agent] = currentRows(p.row);
    return `(select xmin::text from c${k}) as v${k}, (select watched_until from c${k}) as w${k},
  case when ${refused} then ${current} end as cur${k}, case when ${refused} then ${agent} end as agent${k}`;
  });
  // Nothing follows a conversation that did not exist: an insert sends no notice.
  const notify = !isNew && present.includes('conversation_events') ? notifyWatched('$1') : '';
  return `with ${writes.join(',\n  ')},
  c as (${ks.map((k) => `select * from c${k}`).join(' union all ')}),
  ${inserts.join(',\n  ')}
select ${answers.join(',\n  ')}${notify}`;
}

/**
 * The turn writes' texts by name, made on first use: one for each combination of tables a write
 * fills (its name says which), so at most 2 × 2⁹ and in practice a handful, each prepared once per
 * connection that runs it.
 */
const turnStatements = new Map<string, string>();

/** The name of the turn write statement `kind` for the tables `present`, its text made on first use by `make`. */
function turnStatementNamed(kind: string, present: readonly Following[], make: () => string): { name: string; text: string } {
  const name = `${kind}:${FOLLOWING.map((t) => (present.includes(t) ? 1 : 0)).join('')}`;
  let text = turnStatements.get(name);
  if (text === undefined) turnStatements.set(name, (text = make()));
  return { name, text };
}

export class PostgresWriter implements TurnWriter {
  /**
   * `prepared`: run the statements as named prepared statements, parsed and planned once per
   * connection. Off behind a pooler in transaction mode that does not keep them (PgBouncer before
   * 1.21): each is then parsed and planned on every call.
   */
  /** The rows this process wrote last, for the next call on each conversation (kept-rows.ts). */
  readonly kept: KeptRows;
  /** Turn writes that went in batches of several, and the statements that carried them. */
  readonly batches = { writes: 0, statements: 0 };
  /** Turn writes waiting for the end of this turn of the event loop (flush). */
  private queue: PendingWrite[] = [];

  /**
   * `keptBytes`: memory for kept rows (0: none kept, every call reads). `batches` false: every
   * turn write in a statement of its own.
   */
  constructor(
    private readonly knex: Knex,
    private readonly opts: { prepared: boolean; keptBytes?: number; batches?: boolean } = { prepared: true },
  ) {
    this.kept = new KeptRows(opts.keptBytes ?? 0);
  }

  /** Runs a statement; pg prepares a named one on the connection's first use of the name. */
  private run<T>(name: keyof typeof STATEMENTS, values: unknown[]): Promise<T[]> {
    return this.runText(name, STATEMENTS[name], values);
  }

  private runText<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    const query = this.opts.prepared ? { name, text, values } : { text, values };
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
    const agent = (await this.run<AgentTableRow>('agentBySlug', [tenantId, slug])).at(0);
    this.kept.agent(agent);
    return agent;
  }

  async agentWithConversation(tenantId: string, slug: string, conversationId: string): Promise<{ agent?: AgentTableRow; conversation?: ConversationTableRow }> {
    const kept = this.kept.lend(tenantId, slug, conversationId);
    if (kept) return kept;
    const row = (
      await this.run<{ agent: AgentTableRow; conversation: ConversationTableRow | null }>('agentWithConversation', [tenantId, slug, conversationId])
    ).at(0);
    this.kept.agent(row?.agent);
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
    lease: { id: string; until: string; now: string; auditSeq?: number; version?: string },
  ): Promise<ConversationTableRow | undefined> {
    const values = [ref.id, ref.tenantId, lease.id, lease.until, lease.now];
    // Taking the lease makes another row version: what is kept is not the stored row any more.
    this.kept.forget(ref.id);
    if (lease.version !== undefined && lease.auditSeq !== undefined) {
      const row = (await this.run<ConversationTableRow>('takeLeaseKept', [...values, lease.auditSeq, lease.version])).at(0);
      if (!row) {
        this.kept.stale(ref.id);
        throw new StaleRead(ref.id);
      }
      return row;
    }
    const rows =
      lease.auditSeq === undefined
        ? await this.run<ConversationTableRow>('takeLease', values)
        : await this.run<ConversationTableRow>('takeLeaseAt', [...values, lease.auditSeq]);
    return rows.at(0);
  }

  async commit(w: WriteRows, lease: { id: string } | null): Promise<void> {
    const rows = tableRows(w);
    // An idempotency key (which another write may hold) and review findings (whose groups a batch
    // would have to merge) go alone.
    if (this.opts.batches === false || FOLLOWING.some((t) => rows[t].length > 0 && !BATCHED.includes(t))) return this.commitOne(w, lease, rows);
    return new Promise<void>((resolve, reject) => this.enqueue({ w, lease, rows, resolve, reject }));
  }

  /** Queues a write for the batch of this turn of the event loop, sent when the loop's I/O is done. */
  private enqueue(p: PendingWrite): void {
    if (this.queue.length === 0) setImmediate(() => this.flush());
    this.queue.push(p);
  }

  /**
   * The turn writes that reached the writer within one turn of the event loop, in statements of
   * up to MAX_BATCH writes each: a write alone goes as it always did. A process writes one turn at
   * a time per conversation (ConversationStore.exclusive), so a batch never holds two writes of one
   * conversation; should it, the second waits for the next batch.
   */
  private flush(): void {
    const waiting = this.queue.splice(0);
    const seen = new Set<string>();
    // New conversations' writes and updates in batches of their own: each kind has its statements.
    const batches = { new: [] as PendingWrite[], update: [] as PendingWrite[] };
    const send = (kind: keyof typeof batches) => {
      const batch = batches[kind];
      if (batch.length === 1) settleWith(batch[0], this.commitOne(batch[0].w, batch[0].lease, batch[0].rows));
      else if (batch.length > 1) void this.commitBatch(batch, kind === 'new');
      batches[kind] = [];
    };
    for (const p of waiting) {
      if (seen.has(p.w.conversation.id)) {
        this.enqueue(p);
        continue;
      }
      seen.add(p.w.conversation.id);
      const kind = p.w.isNew ? 'new' : 'update';
      batches[kind].push(p);
      if (batches[kind].length === MAX_BATCH) send(kind);
    }
    send('new');
    send('update');
  }

  /**
   * Several turn writes in one statement (batchStatement), each applied or refused on its own
   * conditions, as its own statement would be. A statement PostgreSQL refused wrote nothing, and
   * each write then goes on its own, so that one write's fault (a row a constraint refuses, a
   * deadlock with another process's batch) is that write's alone. A statement whose fate is not
   * known (the connection failed, the time-out) fails every write of it, as it would one write:
   * it may have committed, and a write made again on top of itself would store its turn twice.
   */
  private async commitBatch(waiting: PendingWrite[], isNew: boolean): Promise<void> {
    // In the order of their conversations' ids, so that two processes' batches lock shared rows in
    // the same order and cannot deadlock on them.
    const batch = waiting.sort((a, b) => (a.w.conversation.id < b.w.conversation.id ? -1 : 1));
    const size = 2 ** Math.ceil(Math.log2(batch.length));
    const present = FOLLOWING.filter((t) => batch.some((p) => p.rows[t].length > 0));
    const { name, text } = turnStatementNamed(`${isNew ? 'batchNew' : 'batchTurn'}${size}`, present, () => batchStatement(size, present, isNew));
    const now = new Date().toISOString();
    const values: unknown[] = isNew ? [] : [now];
    // Up to a power of two, so that a handful of statements serve every batch: the rest match no row.
    for (let k = 0; k < size; k++) {
      const p = batch.at(k);
      const row = p ? JSON.stringify(p.w.conversation) : '{}';
      if (isNew) values.push(row);
      else values.push(row, p?.w.expectedAuditSeq ?? -1, p?.lease?.id ?? null, p?.w.readVersion ?? null);
    }
    for (const t of present) values.push(JSON.stringify(batch.map((p) => p.rows[t])));
    let answer: Record<string, unknown> | undefined;
    try {
      answer = (await this.runText<Record<string, unknown>>(name, text, values)).at(0);
    } catch (err) {
      if (refusedWhole(err)) for (const p of batch) settleWith(p, this.commitOne(p.w, p.lease, p.rows));
      else
        for (const p of batch) {
          this.kept.forget(p.w.conversation.id);
          p.reject(err);
        }
      return;
    }
    this.batches.writes += batch.length;
    this.batches.statements++;
    batch.forEach((p, k) => {
      const version = (answer?.[`v${k}`] as string | null | undefined) ?? null;
      try {
        this.settle(
          p.w,
          {
            version,
            watched_until: answer?.[`w${k}`] as string | null,
            current: answer?.[`cur${k}`] as ConversationTableRow | null,
            current_agent: answer?.[`agent${k}`] as AgentTableRow | null,
          },
          now,
        );
        p.resolve();
      } catch (err) {
        p.reject(err);
      }
    });
  }

  private async commitOne(w: WriteRows, lease: { id: string } | null, rows: Record<Following, readonly unknown[]>): Promise<void> {
    const id = w.conversation.id;
    const kept = !w.isNew && w.readVersion !== undefined;
    const present = FOLLOWING.filter((t) => rows[t].length > 0);
    const { name, text } = turnStatementNamed(w.isNew ? 'insertTurn' : kept ? 'updateKeptTurn' : 'updateTurn', present, () =>
      turnStatement(w.isNew, present, kept),
    );
    const tables = present.map((t) => JSON.stringify(rows[t]));
    const row = JSON.stringify(w.conversation);
    const now = new Date().toISOString();
    let answer: Answer | undefined;
    try {
      answer = (
        w.isNew
          ? await this.runText<Answer>(name, text, [row, ...tables])
          : await this.runText<Answer>(name, text, [row, w.expectedAuditSeq, lease?.id ?? null, now, ...(kept ? [w.readVersion] : []), ...tables])
      ).at(0);
    } catch (err) {
      this.kept.forget(id);
      if (isUniqueViolation(err) && (err as { table?: string }).table === 'idempotency_keys') throw new DuplicateIdempotencyKeyError();
      throw err;
    }
    this.settle(w, answer, now);
  }

  /** What a write's answer means for its caller and for the row kept of its conversation. */
  private settle(w: WriteRows, answer: Answer | undefined, now: string): void {
    const id = w.conversation.id;
    if (!answer?.version) {
      if (!w.isNew && w.readVersion !== undefined) {
        this.kept.stale(id, { agent: answer?.current_agent ?? null, conversation: answer?.current ?? null });
        throw new StaleRead(id);
      }
      this.kept.forget(id);
      throw new ConcurrentUpdateError(`conversation ${id} changed underneath this turn`);
    }
    // The row as stored now (a write releases the lease it held, and one without leaves none live).
    // Not one an event stream follows: the stream's mark, renewed with each heartbeat, makes
    // another row version, which would refuse most next calls and cost each an engine run more.
    if (!(answer.watched_until && answer.watched_until >= now)) this.kept.keep({ ...w.conversation, lease_id: null, lease_until: null }, answer.version);
    else this.kept.forget(id);
  }
}

/** A turn write's answer: the new row's version (null: refused), and for a refused kept write the current rows. */
type Answer = {
  version: string | null;
  watched_until?: string | null;
  current?: ConversationTableRow | null;
  current_agent?: AgentTableRow | null;
};

/** A turn write waiting for its batch. */
interface PendingWrite {
  w: WriteRows;
  lease: { id: string } | null;
  rows: Record<Following, readonly unknown[]>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The most writes one batch statement carries (a power of two). */
const MAX_BATCH = 16;

const settleWith = (p: PendingWrite, done: Promise<void>) => void done.then(p.resolve, p.reject);

/**
 * Whether PostgreSQL answered the statement with an error, so that it wrote nothing: an error
 * message from the server (pg's DatabaseError, with a severity and a SQLSTATE), other than a lost
 * connection (class 08), a shutdown or crash (57P) or an internal error (XX), after which the
 * statement's fate is not known. A socket's error (`EPIPE`, `ECONNRESET`) or the client's time-out
 * has no severity.
 */
function refusedWhole(err: unknown): boolean {
  const { code, severity } = (err ?? {}) as { code?: unknown; severity?: unknown };
  return typeof severity === 'string' && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|57P|XX)/.test(code);
}

/** A write's rows by the table they go to. */
function tableRows(w: WriteRows): Record<Following, readonly unknown[]> {
  return {
    turns: w.turns,
    audit_entries: w.audit,
    conversation_events: w.events,
    webhook_deliveries: w.webhooks,
    idempotency_keys: w.idempotency ? [w.idempotency] : [],
    agent_stats: w.stats,
    agent_closes: w.closes,
    review_groups: w.reviewGroups,
    review_occurrences: w.reviewOccurrences,
  };
}
