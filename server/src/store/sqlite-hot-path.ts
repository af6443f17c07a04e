// The converse hot path on SQLite: statements prepared once per connection and run on Knex's
// own connection (taken from Knex's pool, so never inside another Knex transaction). Knex builds
// and prepares every statement anew; on a converse call that was about half of the server's CPU
// time (docs/performance.md), so the few statements of that path are kept prepared here.
import type { Knex } from 'knex';
import { withPooledConnection } from './knex-adapter.js';

type Params = Record<string, unknown>;

interface Statement {
  run(params?: Params): { changes: number };
  get(params?: Params): unknown;
}

interface Connection {
  prepare(sql: string): Statement;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
}

const insertSql = (table: string, columns: readonly string[]) =>
  `insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`;

export const CONVERSATION_COLUMNS = [
  'id',
  'tenant_id',
  'agent_id',
  'agent_version',
  'user_id',
  'status',
  'outcome',
  'capability',
  'capability_id',
  'phase',
  'awaiting_input',
  'state',
  'context',
  'turn_count',
  'audit_seq',
  'created_at',
  'updated_at',
  'completed_at',
  'last_user_turn_at',
  'inactive_after',
  'erased_at',
  'audit_hash',
  'event_seq',
] as const;
export const EVENT_COLUMNS = ['tenant_id', 'conversation_id', 'seq', 'events', 'created_at'];
export const WEBHOOK_COLUMNS = [
  'id',
  'tenant_id',
  'agent_id',
  'conversation_id',
  'event',
  'url',
  'secret_name',
  'payload',
  'status',
  'attempts',
  'next_attempt_at',
  'created_at',
  'seq',
];
const TURN_COLUMNS = ['conversation_id', 'idx', 'tenant_id', 'role', 'message', 'phase', 'options', 'author', 'timestamp'];
const AUDIT_COLUMNS = [
  'id',
  'conversation_id',
  'sequence',
  'tenant_id',
  'turn_index',
  'type',
  'request_id',
  'timestamp',
  'duration_ms',
  'data',
  'data_hash',
  'hash',
];
const IDEMPOTENCY_COLUMNS = ['tenant_id', 'agent_id', 'key', 'request_hash', 'conversation_id', 'response', 'created_at'];
const UPDATABLE = CONVERSATION_COLUMNS.filter((c) => !['id', 'tenant_id', 'agent_id', 'created_at'].includes(c));

function prepareAll(conn: Connection) {
  return {
    agentBySlug: conn.prepare('select * from agents where tenant_id = @tenant_id and slug = @slug'),
    conversation: conn.prepare('select * from conversations where id = @id and tenant_id = @tenant_id and agent_id = @agent_id'),
    insertConversation: conn.prepare(insertSql('conversations', CONVERSATION_COLUMNS)),
    updateConversation: conn.prepare(
      `update conversations set ${UPDATABLE.map((c) => `${c} = @${c}`).join(', ')} where id = @id and tenant_id = @tenant_id and audit_seq = @expected_audit_seq`,
    ),
    insertTurn: conn.prepare(insertSql('turns', TURN_COLUMNS)),
    insertAudit: conn.prepare(insertSql('audit_entries', AUDIT_COLUMNS)),
    insertIdempotency: conn.prepare(insertSql('idempotency_keys', IDEMPOTENCY_COLUMNS)),
    insertEvent: conn.prepare(insertSql('conversation_events', EVENT_COLUMNS)),
    insertWebhook: conn.prepare(insertSql('webhook_deliveries', WEBHOOK_COLUMNS)),
  };
}

export type HotStatements = ReturnType<typeof prepareAll>;

export class SqliteHotPath {
  private readonly prepared = new WeakMap<Connection, HotStatements>();

  constructor(private readonly knex: Knex) {}

  /** Runs `fn` synchronously on a pooled connection with its prepared statements. */
  run<T>(fn: (s: HotStatements, conn: Connection) => T): Promise<T> {
    return withPooledConnection(this.knex, (conn: Connection) => {
      let s = this.prepared.get(conn);
      if (!s) {
        s = prepareAll(conn);
        this.prepared.set(conn, s);
      }
      return fn(s, conn);
    });
  }
}

/** better-sqlite3 binds numbers, strings, bigints, buffers and null; booleans become 0/1. */
export function sqliteParams(row: Params): Params {
  const out: Params = {};
  for (const [k, v] of Object.entries(row)) out[k] = typeof v === 'boolean' ? (v ? 1 : 0) : v === undefined ? null : v;
  return out;
}
