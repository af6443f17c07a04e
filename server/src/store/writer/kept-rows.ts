// The conversation rows this process wrote last, and the agents it read, kept so that the next
// call on the same conversation in this process need not read them back: on PostgreSQL a
// continuing turn is then one round trip instead of two (docs/performance.md, "The read").
//
// A kept row is only ever a guess. The call that uses it writes on the condition that the stored
// row is still the very version this process wrote (PostgreSQL's `xmin`, which every change of the
// row moves, a lease, a mark or a hand edit as much as another process's turn) and that its agent
// is still live (postgres-writer.ts). A refused write answers with the current rows, kept for the
// call's second run, which reads nothing (StaleRead): a conversation whose calls alternate
// between replicas costs one engine run more a call, and no round trip more.
import { LRUCache } from 'lru-cache';
import type { AgentTableRow, ConversationTableRow } from '../rows.js';

interface Kept {
  row: ConversationTableRow;
  /** The row's version as written (`xmin`); null: rows a refused write answered with, for one call, as a read would have. */
  version: string | null;
}

/** What a kept row and its agent cost in memory, about: the row's text and a fixed part. */
const bytesOf = (k: Kept) => 512 + k.row.state.length + (k.row.context?.length ?? 0) + (k.row.user_id?.length ?? 0) + (k.row.page_url?.length ?? 0);

export class KeptRows {
  private readonly conversations: LRUCache<string, Kept> | null;
  private readonly agents = new LRUCache<string, AgentTableRow>({ max: 10_000 });
  /**
   * Calls that found their rows kept here, calls that read them from the database, and kept rows
   * found changed when written (the call's second run, on the rows the refusal answered with, is
   * counted in neither of the others).
   */
  readonly tallies = { kept: 0, database: 0, stale: 0 };

  /** `maxBytes` 0: nothing is kept (every call reads). */
  constructor(maxBytes: number) {
    this.conversations = maxBytes > 0 ? new LRUCache<string, Kept>({ maxSize: maxBytes, sizeCalculation: bytesOf }) : null;
  }

  /** Bytes held (the rows' text, about). */
  get bytes(): number {
    return this.conversations?.calculatedSize ?? 0;
  }

  /** Remembers an agent as read (archived or not: a kept row is lent only with a live one). */
  agent(row: AgentTableRow | undefined): void {
    if (row) this.agents.set(row.id, row);
  }

  /**
   * The kept rows of conversation `id` as a call on it through agent `slug` would read them, the
   * row carrying its version (`row_version`) for the call's conditioned write; undefined when
   * nothing fitting is kept.
   */
  lend(tenantId: string, slug: string, id: string): { agent: AgentTableRow; conversation: ConversationTableRow } | undefined {
    const kept = this.conversations?.get(id);
    const agent = kept && this.agents.get(kept.row.agent_id);
    if (!kept || !agent || kept.row.tenant_id !== tenantId || agent.tenant_id !== tenantId || agent.slug !== slug || agent.archived_at) {
      this.tallies.database++;
      return undefined;
    }
    // Rows a refused write answered with are one call's read (its second run), not a version to write on.
    if (kept.version === null) {
      this.conversations!.delete(id);
      return { agent, conversation: kept.row };
    }
    this.tallies.kept++;
    return { agent, conversation: { ...kept.row, row_version: kept.version } };
  }

  /** Keeps a conversation's row as just written, at `version`. */
  keep(row: ConversationTableRow, version: string): void {
    this.conversations?.set(row.id, { row, version });
  }

  /** Forgets conversation `id`'s row (a write that failed, a lease taken: the stored row is another version now). */
  forget(id: string): void {
    this.conversations?.delete(id);
  }

  /** A kept row turned out changed: forgets it, keeping the current rows (when known) for the call's second run. */
  stale(id: string, current?: { agent: AgentTableRow | null; conversation: ConversationTableRow | null }): void {
    this.tallies.stale++;
    this.conversations?.delete(id);
    if (current?.agent) this.agent(current.agent);
    if (current?.conversation) this.conversations?.set(id, { row: current.conversation, version: null });
  }
}
