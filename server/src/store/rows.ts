// The tables' rows as the drivers return them: one interface per table. Integers may come back
// as strings (PostgreSQL bigint) and booleans as 0/1 (SQLite), which the mappers normalise.
import type { AuditType, ConversationStatus } from '@switchboard/contract';

type Int = number | string;

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
  erased_at: string | null;
  event_seq: Int | null;
  lease_id?: string | null;
  lease_until?: string | null;
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
}
