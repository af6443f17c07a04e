// The converse path's statements, behind one writer per database (in the spirit of Kysely's
// dialect adapters): sqlite-writer.ts runs them as prepared better-sqlite3 statements,
// postgres-writer.ts through Knex. Stores call the writer instead of testing the dialect.
import { UnavailableError } from '../../errors.js';
import type { AgentTableRow, ConversationTableRow } from '../rows.js';
import type { WriteRows } from './turn-rows.js';

export interface TurnWriter {
  /** PostgreSQL: the rows this process wrote last, which spare the next call on a conversation its read (kept-rows.ts). */
  readonly kept?: { readonly tallies: { kept: number; database: number; stale: number }; readonly bytes: number };
  /** PostgreSQL: turn writes that went in batches of several, the statements that carried them, and the batches refused whole (postgres-writer.ts). */
  readonly batches?: { readonly writes: number; readonly statements: number; readonly refused: number };
  /** PostgreSQL: the next `n` turn writes go in one flush (a test's seam; postgres-writer.ts). */
  gather?(n: number): void;
  /** The agent named by a slug, archived or not: the first read of every converse call. */
  agentBySlug(tenantId: string, slug: string): Promise<AgentTableRow | undefined>;
  /**
   * The agent named by a slug and, where a read costs a round trip (PostgreSQL), its conversation
   * `conversationId` in the same one: the reads of a continuing converse call.
   */
  agentWithConversation(tenantId: string, slug: string, conversationId: string): Promise<{ agent?: AgentTableRow; conversation?: ConversationTableRow }>;
  /** A conversation's row; `agentId` null: of any agent of the tenant. */
  conversation(tenantId: string, agentId: string | null, id: string): Promise<ConversationTableRow | undefined>;
  /**
   * Commits a write in one transaction. An update applies only while the row still has the
   * expected audit sequence and, with a lease, only for its holder (the update releases the
   * lease); without one, on a database several processes share, only while nobody holds the row.
   * Otherwise nothing is written and ConcurrentUpdateError is thrown. An idempotency key stored
   * meanwhile by another request throws DuplicateIdempotencyKeyError.
   */
  commit(rows: WriteRows, lease: { id: string } | null): Promise<void>;
  /**
   * Takes the lease on a conversation that has none or whose lease ran out (at `now`), until
   * `until`, and (with `auditSeq`) only while the row still has that audit sequence; answers the
   * row with the lease taken, or undefined when it is held, changed or absent. With `version` (a
   * kept row's, kept-rows.ts), only while the row is still that version and its agent is live;
   * otherwise it throws StaleRead.
   */
  takeLease(
    ref: { tenantId: string; id: string },
    lease: { id: string; until: string; now: string; auditSeq?: number; version?: string },
  ): Promise<ConversationTableRow | undefined>;
}

/**
 * A call worked from a conversation row this process kept (kept-rows.ts), and the stored row had
 * changed since, or its agent was archived: nothing was written or sent. The call starts over from
 * its reads (ConversationService), which find the current rows kept from the refusal.
 */
export class StaleRead extends Error {
  constructor(id: string) {
    super(`the kept row of conversation ${id} was not the stored one`);
    this.name = 'StaleRead';
  }
}

/** The conversation changed (or its lease was lost) between the read and the write: nothing was written; a retry is safe. */
export class ConcurrentUpdateError extends UnavailableError {
  constructor(detail: string) {
    super(`The conversation was changed by another request; try again (${detail})`);
  }
}

export class DuplicateIdempotencyKeyError extends Error {}
