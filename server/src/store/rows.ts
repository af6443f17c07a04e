// The tables' rows as the drivers return them: one interface per table. Integers may come back
// as strings (PostgreSQL bigint) and booleans as 0/1 (SQLite), which the mappers normalise.
import type { AuditType, ConversationStatus } from '@switchboard/contract';

type Int = number | string;

/** A row the same transaction wrote or read a moment ago; its absence is a broken invariant, not a 404. */
export function present<T>(row: T | undefined, what: string): T {
  if (row === undefined) throw new Error(`${what} row missing inside its own transaction`);
  return row;
}

export interface ConversationTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_version: Int;
  user_id: string | null;
  status: ConversationStatus;
  outcome: string | null;
  capability: string;
  capability_id: string;
  phase: string;
  awaiting_input: boolean | number;
  state: string;
  context: string | null;
  turn_count: Int;
  audit_seq: Int;
  audit_hash: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  last_user_turn_at: string;
  inactive_after: string | null;
  /** The ten minutes inactive_after falls in (turn-rows.ts deadlineBucket; migration 023). */
  inactive_bucket?: string | null;
  erased_at: string | null;
  event_seq: Int | null;
  lease_id?: string | null;
  lease_until?: string | null;
  /** A call waits for this lease: its release is announced (migration 021). */
  lease_wanted?: boolean | Int;
  /** PostgreSQL: an event stream follows it until then; its writes announce new events (migration 021). */
  watched_until?: string | null;
  /** Not a column: on a row this process kept as it wrote it (kept-rows.ts), that row version (`xmin`), which the call's write must still find. */
  row_version?: string;
  channel?: string | null;
  origin?: string | null;
  page_url?: string | null;
}

export interface TurnTableRow {
  conversation_id: string;
  idx: Int;
  tenant_id: string;
  role: 'user' | 'agent';
  message: string;
  phase: string | null;
  options: string | null;
  author: string | null;
  timestamp: string;
  /** JSON: the passages the turn's answer cites (migration 029; absent from rows read before it). */
  citations?: string | null;
}

export interface AuditTableRow {
  id: string;
  conversation_id: string;
  sequence: Int;
  tenant_id: string;
  turn_index: Int | null;
  type: AuditType;
  request_id: string;
  timestamp: string;
  duration_ms: number | string | null;
  data: string;
  data_hash: string | null;
  hash: string | null;
  erased_at: string | null;
}

export interface AgentTableRow {
  id: string;
  tenant_id: string;
  slug: string;
  current_version: Int;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
  split_version: Int | null;
  split_share: Int | null;
  split_started_at: string | null;
  release_seq: Int;
  release_hash: string | null;
}

export interface ApiKeyTableRow {
  id: string;
  tenant_id: string;
  name: string | null;
  prefix: string;
  secret_hash: string;
  scopes: string;
  created_at: string;
  revoked_at: string | null;
  /** Publishable (widget) keys: the agents' slugs and the allowed origins, as JSON arrays, and the key itself. */
  agents?: string | null;
  origins?: string | null;
  public_key?: string | null;
  /** The key's grants as JSON (contract/src/access.ts); null: its scopes stand for roles. */
  roles?: string | null;
}

export interface AgentVersionTableRow {
  agent_id: string;
  version: Int;
  tenant_id: string;
  digest: string;
  definition: string;
  created_at: string;
  /** What made the version (migration 027); null for older ones. */
  note?: string | null;
  /** The knowledge snapshot it pins and its digest (migration 031); null when it follows its sources live. */
  knowledge_snapshot?: Int | null;
  knowledge_digest?: string | null;
}

interface IdempotencyTableRow {
  tenant_id: string;
  agent_id: string;
  key: string;
  request_hash: string;
  conversation_id: string;
  response: string;
  created_at: string;
}

interface EventTableRow {
  id: Int;
  tenant_id: string;
  conversation_id: string;
  seq: Int;
  events: string;
  created_at: string;
}

interface WebhookDeliveryTableRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  conversation_id: string;
  event: string;
  url: string;
  secret_name: string | null;
  payload: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: Int;
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
  last_status: Int | null;
  last_error: string | null;
  seq: Int;
}

interface WebhookAttemptTableRow {
  delivery_id: string;
  attempt: Int;
  tenant_id: string;
  at: string;
  status: Int | null;
  error: string | null;
  duration_ms: number | string;
}

interface TenantSecretTableRow {
  tenant_id: string;
  name: string;
  ciphertext: string;
  iv: string;
  tag: string;
  created_at: string;
  updated_at: string;
}

// Knex's table typing: `knex('conversations')` returns ConversationTableRow rows, and an insert
// or update is checked against the table's columns.
declare module 'knex/types/tables.js' {
  interface Tables {
    agents: AgentTableRow;
    agent_versions: AgentVersionTableRow;
    conversations: ConversationTableRow;
    turns: TurnTableRow;
    audit_entries: AuditTableRow;
    idempotency_keys: IdempotencyTableRow;
    conversation_events: EventTableRow;
    webhook_deliveries: WebhookDeliveryTableRow;
    webhook_attempts: WebhookAttemptTableRow;
    api_keys: ApiKeyTableRow;
    tenant_secrets: TenantSecretTableRow;
  }
}
