// The SQL of the converse path on PostgreSQL, as text: the turn write as one statement of
// data-modifying CTEs per shape (which tables it fills), the batch of several such writes, and
// the reads and lease statements. Pure: postgres-writer.ts runs them. docs/performance.md has the
// measurements behind these shapes.
import { KNOWLEDGE_COUNTERS, STAT_COUNTERS } from '../../domain.js';
import {
  CLOSE_KEY,
  CLOSE_UPSERT_TAIL,
  COLUMNS,
  INSERT_ONLY_COLUMNS,
  KNOWLEDGE_STAT_KEY,
  KNOWLEDGE_STAT_UPSERT_TAIL,
  REVIEW_GROUP_UPSERT_TAIL,
  STAT_KEY,
  STAT_UPSERT_TAIL,
} from './turn-rows.js';

type Table = keyof typeof COLUMNS;

const cols = (table: Table, alias?: string) => COLUMNS[table].map((c) => (alias ? `${alias}.${c}` : c)).join(', ');

/** Inserts the rows of a JSON array parameter, only when the conversation's write (CTE `c`) matched. */
const insertFrom = (table: Table, param: string) =>
  `insert into ${table} (${cols(table)}) select ${cols(table, 'r')} from json_populate_recordset(null::${table}, ${param}::json) r where exists (select 1 from c)`;

/** The tables a turn's write may insert into after the conversation's, in WriteRows' order. */
export const FOLLOWING = [
  'turns',
  'audit_entries',
  'conversation_events',
  'webhook_deliveries',
  'idempotency_keys',
  'agent_stats',
  'agent_closes',
  'knowledge_stats',
  'review_groups',
  'review_occurrences',
] as const satisfies readonly Table[];
export type Following = (typeof FOLLOWING)[number];

const UPSERT_TAILS: Partial<Record<Following, string>> = {
  agent_stats: STAT_UPSERT_TAIL,
  agent_closes: CLOSE_UPSERT_TAIL,
  knowledge_stats: KNOWLEDGE_STAT_UPSERT_TAIL,
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
export const STATEMENTS = {
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
export function turnStatement(isNew: boolean, present: readonly Following[], kept: boolean): string {
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
export const BATCHED: readonly Following[] = [
  'turns',
  'audit_entries',
  'conversation_events',
  'webhook_deliveries',
  'agent_stats',
  'agent_closes',
  'knowledge_stats',
];

/** Counter tables: a batch adds up its writes' rows of one key first, since one insert may not update a row twice. */
const SUMMED: Partial<Record<Following, { key: readonly string[]; counters: readonly string[] }>> = {
  agent_stats: { key: STAT_KEY, counters: STAT_COUNTERS },
  agent_closes: { key: CLOSE_KEY, counters: ['n'] },
  knowledge_stats: { key: KNOWLEDGE_STAT_KEY, counters: KNOWLEDGE_COUNTERS },
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
export function turnStatementNamed(kind: string, present: readonly Following[], make: () => string): { name: string; text: string } {
  const name = `${kind}:${FOLLOWING.map((t) => (present.includes(t) ? 1 : 0)).join('')}`;
  let text = turnStatements.get(name);
  if (text === undefined) turnStatements.set(name, (text = make()));
  return { name, text };
}
