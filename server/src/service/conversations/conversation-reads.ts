// What the API reads of conversations: one conversation (its record, its detail, its audit log
// and chain), an agent's conversations page by page, and the checks that a conversation belongs
// to the agent (and, for the widget, to the visitor) asking.
import type { AuditEntry, AuditType, ConversationDetail, ConversationRecord, ConversationSummary, Turn } from '@switchboard/contract';
import type { Channel, Conversation, TurnRow } from '../../domain.js';
import { NotFoundError } from '../../errors.js';
import { decodeCursor, encodeCursor, isTimeAndId } from '../../lib/cursor.js';
import { iso } from '../../lib/clock.js';
import type { ConversationStore, ListFilters } from '../../store/conversations/conversation-store.js';
import type { AgentService } from '../agents/agent-service.js';

function toTurn(t: TurnRow): Turn {
  const turn: Turn = { role: t.role, message: t.message, timestamp: t.timestamp };
  if (t.role === 'agent') {
    if (t.phase) turn.phase = t.phase;
    turn.options = t.options ?? [];
    if (t.author) turn.author = t.author;
    if (t.citations?.length) turn.citations = t.citations;
  }
  return turn;
}

export class ConversationReads {
  constructor(
    private readonly agents: AgentService,
    private readonly store: ConversationStore,
  ) {}

  /** The conversation of this agent, or 404 (unknown, foreign). */
  async owned(tenantId: string, slug: string, id: string): Promise<Conversation> {
    const agent = await this.agents.any(tenantId, slug);
    const c = await this.store.get(tenantId, agent.id, id);
    if (!c) throw new NotFoundError('conversation_not_found', `No conversation ${id}`);
    return c;
  }

  /** A conversation of the web chat widget, for the visitor who started it only (else 404). */
  async ownedBy(tenantId: string, slug: string, id: string, userId: string): Promise<Conversation> {
    const c = await this.owned(tenantId, slug, id);
    if (c.userId !== userId || c.erasedAt || c.channel?.kind !== 'web') throw new NotFoundError('conversation_not_found', `No conversation ${id}`);
    return c;
  }

  /** A conversation's turns, oldest first. */
  turnsOf(c: Conversation): Promise<TurnRow[]> {
    return this.store.turns(c.tenantId, c.id, c.createdAt);
  }

  private record(c: Conversation, turns: TurnRow[]): ConversationRecord {
    return {
      id: c.id,
      agent_id: c.agentId,
      capability_id: c.capabilityId,
      user_id: c.userId,
      status: c.status,
      outcome: c.outcome,
      turns: turns.map(toTurn),
      created_at: c.createdAt,
      updated_at: c.updatedAt,
      completed_at: c.completedAt,
    };
  }

  async verifyAudit(tenantId: string, slug: string, id: string) {
    const c = await this.owned(tenantId, slug, id);
    return { conversation_id: c.id, ...(await this.store.verifyAudit(tenantId, c.id)) };
  }

  async history(tenantId: string, slug: string, id: string): Promise<ConversationRecord> {
    const c = await this.owned(tenantId, slug, id);
    return this.record(c, await this.store.turns(tenantId, c.id, c.createdAt));
  }

  async detail(tenantId: string, slug: string, id: string): Promise<ConversationDetail> {
    const c = await this.owned(tenantId, slug, id);
    return {
      ...this.record(c, await this.store.turns(tenantId, c.id, c.createdAt)),
      capability: c.capability,
      phase: c.phase,
      awaiting_input: c.awaitingInput,
      agent_version: c.agentVersion,
      slots: c.flow.slots,
      context: c.context,
      erased_at: c.erasedAt,
      channel: channelOf(c),
    };
  }

  async list(
    tenantId: string,
    slug: string,
    q: {
      status?: ListFilters['status'];
      user_id?: string;
      capability?: string;
      channel?: 'api' | Channel['kind'];
      created_after?: string;
      created_before?: string;
      limit: number;
      cursor?: string;
    },
  ): Promise<{ data: ConversationSummary[]; next_cursor: string | null }> {
    const agent = await this.agents.any(tenantId, slug);
    const after = decodeCursor(q.cursor, isTimeAndId);
    const rows = await this.store.list(
      { tenantId, agentId: agent.id },
      {
        status: q.status,
        userId: q.user_id,
        capability: q.capability,
        channel: q.channel,
        createdAfter: q.created_after ? iso(new Date(q.created_after)) : undefined,
        createdBefore: q.created_before ? iso(new Date(q.created_before)) : undefined,
      },
      { limit: q.limit + 1, after: after ? { createdAt: after[0], id: after[1] } : null },
    );
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      data: page.map((c) => {
        const { turns: _turns, ...rest } = this.record(c, []);
        return { ...rest, capability: c.capability, turn_count: c.turnCount, channel: channelOf(c) };
      }),
      next_cursor: rows.length > q.limit && last ? encodeCursor([last.createdAt, last.id]) : null,
    };
  }

  async audit(
    tenantId: string,
    slug: string,
    id: string,
    q: { type?: AuditType; limit: number; cursor?: string },
  ): Promise<{ conversation_id: string; data: AuditEntry[]; next_cursor: string | null }> {
    const c = await this.owned(tenantId, slug, id);
    const after = decodeCursor(q.cursor, (v): v is number => Number.isSafeInteger(v) && (v as number) >= 0) ?? 0;
    const rows = await this.store.audit({ tenantId, id: c.id, createdAt: c.createdAt }, { type: q.type, limit: q.limit + 1, afterSeq: after });
    const page = rows.slice(0, q.limit);
    return {
      conversation_id: c.id,
      data: page.map(
        (r) =>
          ({
            id: r.id,
            conversation_id: r.conversationId,
            sequence: r.sequence,
            turn_index: r.turnIndex,
            type: r.type,
            request_id: r.requestId,
            timestamp: r.timestamp,
            duration_ms: r.durationMs,
            data: r.data,
            hash: r.hash,
          }) as AuditEntry,
      ),
      next_cursor: rows.length > q.limit ? encodeCursor(page[page.length - 1].sequence) : null,
    };
  }
}

/** A conversation's channel as the API shows it. */
const channelOf = (c: Conversation) =>
  c.channel ? { kind: c.channel.kind, origin: c.channel.kind === 'web' ? c.channel.origin : null, page_url: c.channel.pageUrl } : null;
