// The conversation status model (PRODUCT.md §3) outside the dialogue itself: operator moves and
// messages, abandonment after inactivity, erasure, and what every status change brings with it
// (audit entry, events, webhook deliveries), written in the same transaction as the change.
import { randomUUID } from 'node:crypto';
import type { Actor, ConversationDetail, ConversationStatus, Turn } from '@switchboard/contract';
import type { AuditDraft, Conversation, EventDraft, TurnRow, WebhookDraft, WebhookEvent } from '../../domain.js';
import { closeDeltas, statDeltas } from '../agents/agent-stats.js';
import type { CompiledAgent } from '../../engine/compile.js';
import { ConflictError, LimitError, NotFoundError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { turnHash } from '../../lib/audit-chain.js';
import { ERASURE } from './erasure.js';
import { maskerOf } from '../privacy/policy.js';
import type { PrivacyService } from '../privacy/privacy-service.js';
import type { ConversationStore, ConversationUnit, TurnWrite } from '../../store/conversations/conversation-store.js';
import type { AgentService } from '../agents/agent-service.js';

/** Which moves the status table allows (the dialogue's own moves go through the engine). */
const TRANSITIONS: Record<ConversationStatus, ConversationStatus[]> = {
  active: ['paused', 'completed', 'escalated', 'abandoned'],
  paused: ['active', 'abandoned'],
  escalated: ['completed'],
  completed: [],
  abandoned: [],
};

const WEBHOOK_OF: Partial<Record<ConversationStatus, WebhookEvent>> = {
  completed: 'conversation.completed',
  escalated: 'conversation.escalated',
  abandoned: 'conversation.abandoned',
};

const isOpen = (s: ConversationStatus) => s === 'active' || s === 'paused';

/** When an active or paused conversation last spoken to at `lastUserTurnAt` becomes abandoned. */
export function inactiveAfter(agent: CompiledAgent, status: ConversationStatus, lastUserTurnAt: string): string | null {
  if (!isOpen(status)) return null;
  return iso(new Date(Date.parse(lastUserTurnAt) + agent.definition.inactivity_timeout_seconds * 1000));
}

export function turnEvent(t: TurnRow): EventDraft {
  const data: Record<string, unknown> = { index: t.idx, role: t.role, message: t.message, timestamp: t.timestamp };
  if (t.role === 'agent') {
    if (t.phase) data.phase = t.phase;
    data.options = t.options ?? [];
    if (t.author) data.author = t.author;
    if (t.citations?.length) data.citations = t.citations;
  }
  return { type: 'turn.created', data, createdAt: t.timestamp };
}

/**
 * Webhook deliveries for a conversation that has just entered `c.status` from `at.from`; `at.seq`
 * orders them with the audit entry of the change.
 */
export function webhooksFor(agent: CompiledAgent, c: Conversation, at: { from: ConversationStatus | null; seq: number; now: string }): WebhookDraft[] {
  const { from, seq, now } = at;
  const event = WEBHOOK_OF[c.status];
  if (!event || from === c.status) return [];
  return (agent.definition.webhooks ?? [])
    .filter((h) => h.events.includes(event))
    .map((h) => ({
      id: randomUUID(),
      agentId: c.agentId,
      event,
      url: h.url,
      secretName: h.secret_name ?? null,
      seq,
      createdAt: now,
      payload: {
        type: event,
        timestamp: now,
        data: {
          conversation_id: c.id,
          agent_id: c.agentId,
          agent_version: c.agentVersion,
          status: c.status,
          outcome: c.outcome,
          capability: c.capability,
          user_id: c.userId,
          created_at: c.createdAt,
          completed_at: c.completedAt,
        },
      },
    }));
}

/** A move to another status, with turns and audit entries to commit in the same write. */
interface StatusChange {
  to: ConversationStatus;
  reason: string;
  outcome: string | null;
  now: string;
  requestId: string;
  /** Who moved it through the API; absent when the service did. */
  actor?: Actor | null;
  turns?: TurnRow[];
  audit?: AuditDraft[];
}

/** The write that moves a conversation to `change.to`: state, audit entry, event and webhooks. */
function statusWrite(agent: CompiledAgent, c: Conversation, change: StatusChange): TurnWrite {
  const { to, reason, outcome, now, requestId, actor, ...extra } = change;
  const audit: AuditDraft[] = [
    ...(extra.audit ?? []),
    { type: 'status_change', turnIndex: null, timestamp: now, durationMs: null, data: { from: c.status, to, reason, outcome, ...(actor ? { actor } : {}) } },
  ];
  const next: Conversation = {
    ...c,
    status: to,
    outcome,
    awaitingInput: to !== 'completed' && to !== 'abandoned',
    flow: to === 'completed' || to === 'abandoned' ? { ...c.flow, wait: 'closed' } : c.flow,
    turnCount: c.turnCount + (extra.turns?.length ?? 0),
    auditSeq: c.auditSeq + audit.length,
    updatedAt: now,
    completedAt: to === 'completed' || to === 'abandoned' ? now : c.completedAt,
    // An operator's resume restarts the inactivity clock.
    inactiveAfter: inactiveAfter(agent, to, to === 'active' ? now : c.lastUserTurnAt),
  };
  const events: EventDraft[] = [
    ...(extra.turns ?? []).map(turnEvent),
    { type: 'status.changed', data: { from: c.status, to, reason, outcome }, createdAt: now },
  ];
  return {
    conversation: next,
    isNew: false,
    expectedAuditSeq: c.auditSeq,
    previousAuditHash: c.auditHash,
    stored: c,
    turns: extra.turns ?? [],
    audit,
    requestId,
    events,
    webhooks: webhooksFor(agent, next, { from: c.status, seq: next.auditSeq, now }),
    stats: statDeltas({ conversation: next, isNew: false, audit }, agent.fallback.name),
    closes: closeDeltas({ conversation: next, audit }),
  };
}

/**
 * Abandons a conversation whose inactivity deadline has passed, inside a unit that holds it, so
 * that a message arriving after the deadline but before the sweeper finds it closed.
 * Returns true when it did.
 */
async function abandonIfDue(
  unit: ConversationUnit,
  due: { conversation: Conversation; agent: CompiledAgent; now: string; requestId: string },
): Promise<boolean> {
  const { conversation: c, agent, now, requestId } = due;
  if (!isOpen(c.status) || !c.inactiveAfter || c.inactiveAfter > now) return false;
  await unit.commit(statusWrite(agent, c, { to: 'abandoned', reason: 'inactivity', outcome: 'abandoned', now, requestId }));
  return true;
}

/**
 * Loads a conversation inside a unit that holds it: 404 when it is unknown, foreign, erased or
 * (with `userId`) another user's, exactly as an unknown one. With `closedCode`, a conversation
 * found past its inactivity deadline is abandoned here (committed) and the call answers 409
 * with that code: a message arriving after the deadline but before the sweeper finds it closed.
 */
export async function openConversation(
  unit: ConversationUnit,
  deps: { agents: AgentService; clock: Clock },
  q: {
    tenantId: string;
    agentId: string | null;
    id: string;
    userId?: string | null;
    requestId: string;
    closedCode?: 'conversation_closed' | 'invalid_transition';
  },
): Promise<{ conversation: Conversation; agent: CompiledAgent; now: string; loadMs: number }> {
  const started = performance.now();
  const c = await unit.load(q.tenantId, q.agentId, q.id);
  const loadMs = Math.round((performance.now() - started) * 100) / 100;
  if (!c || c.erasedAt || (q.userId !== undefined && q.userId !== null && c.userId !== q.userId)) {
    throw new NotFoundError('conversation_not_found', `No conversation ${q.id}`);
  }
  const agent = await deps.agents.compiledVersion(q.tenantId, c.agentId, c.agentVersion);
  const now = iso(deps.clock.now());
  // The abandonment is its own committed write: answering 409 afterwards does not undo it.
  if (q.closedCode && (await abandonIfDue(unit, { conversation: c, agent, now, requestId: q.requestId }))) {
    throw new ConflictError(q.closedCode, 'The conversation was abandoned for inactivity');
  }
  return { conversation: c, agent, now, loadMs };
}

export interface RetentionPolicy {
  /** Days after which closed conversations are erased, for every tenant (0: never). */
  days: number;
  /** Per-tenant overrides. */
  tenants: Readonly<Record<string, number>>;
  /** Hours an idempotency record is kept before the sweeper deletes it (0: kept forever). */
  idempotencyHours: number;
  /**
   * Days of history kept (0: all): turns, audit entries, event rows and webhook deliveries written
   * before are deleted, whatever their conversation (store/partitions.ts).
   */
  historyDays: number;
}

/** One conversation of an agent, as an operator call names it. */
export interface OperatorTarget {
  tenantId: string;
  slug: string;
  id: string;
  requestId: string;
  /** Who acts (auth.ts): a person, a key, the gateway; chained into the audit entry. */
  actor?: Actor | null;
}

export interface LifecycleDeps {
  agents: AgentService;
  store: ConversationStore;
  clock: Clock;
  retention: RetentionPolicy;
  /** The conversation as the API shows it, after an operator's change. */
  detail: (tenantId: string, slug: string, id: string) => Promise<ConversationDetail>;
  /** What each agent masks under its tenant's privacy policy. */
  privacy: PrivacyService;
  maxTurns?: number;
}

export class LifecycleService {
  private readonly agents: AgentService;
  private readonly store: ConversationStore;
  private readonly clock: Clock;
  private readonly retention: RetentionPolicy;
  private readonly detail: LifecycleDeps['detail'];
  private readonly maxTurns: number;
  private readonly privacy: PrivacyService;

  constructor(deps: LifecycleDeps) {
    ({ agents: this.agents, store: this.store, clock: this.clock, retention: this.retention, detail: this.detail, privacy: this.privacy } = deps);
    this.maxTurns = deps.maxTurns ?? Number.MAX_SAFE_INTEGER;
  }

  /** Runs `fn` on a conversation of an agent under its lock (see openConversation). */
  private async onConversation<T>(
    q: { tenantId: string; slug: string; id: string; requestId: string; closedCode?: 'conversation_closed' | 'invalid_transition' },
    fn: (c: Conversation, agent: CompiledAgent, unit: ConversationUnit, now: string) => Promise<T>,
  ): Promise<T> {
    const agentRow = await this.agents.any(q.tenantId, q.slug);
    const out = await this.store.exclusive(`conv:${q.id}`, { tenantId: q.tenantId, id: q.id }, async (unit) => {
      const { conversation, agent, now } = await openConversation(unit, { agents: this.agents, clock: this.clock }, { ...q, agentId: agentRow.id });
      return fn(conversation, agent, unit, now);
    });
    return out as T;
  }

  async setStatus(target: OperatorTarget, change: { to: ConversationStatus; outcome?: string }): Promise<ConversationDetail> {
    const { to, outcome } = change;
    const { requestId } = target;
    await this.onConversation({ ...target, closedCode: 'invalid_transition' }, async (c, agent, unit, now) => {
      if (!TRANSITIONS[c.status].includes(to)) {
        throw new ConflictError('invalid_transition', `A conversation cannot move from ${c.status} to ${to}`);
      }
      const out = to === 'completed' ? (outcome ?? 'resolved') : to === 'escalated' ? 'escalated' : to === 'abandoned' ? 'abandoned' : null;
      await unit.commit(statusWrite(agent, c, { to, reason: 'operator', outcome: out, now, requestId, actor: target.actor ?? null }));
    });
    return this.detail(target.tenantId, target.slug, target.id);
  }

  /** Called after a person's message is stored (the channels send it out). */
  onOperatorMessage?: (c: Conversation, turn: TurnRow) => Promise<void>;

  /**
   * Appends one entry to a conversation's audit log, chained like the dialogue's own, under the
   * conversation's lock (a channel delivery's outcome). False when the conversation is gone or erased.
   */
  async appendAudit(tenantId: string, id: string, entry: AuditDraft, requestId: string): Promise<boolean> {
    const done = await this.store.exclusive(`conv:${id}`, { tenantId, id }, async (unit) => {
      const c = await unit.load(tenantId, null, id);
      if (!c || c.erasedAt) return false;
      await unit.commit({
        conversation: { ...c, auditSeq: c.auditSeq + 1 },
        isNew: false,
        expectedAuditSeq: c.auditSeq,
        previousAuditHash: c.auditHash,
        stored: c,
        turns: [],
        audit: [entry],
        requestId,
        events: [],
      });
      return true;
    });
    return done ?? false;
  }

  async operatorMessage(
    target: OperatorTarget,
    said: { message: string; author?: string },
  ): Promise<{ conversation_id: string; turn_index: number; turn: Turn }> {
    const { message, author } = said;
    const { requestId } = target;
    const { answer, stored, turn } = await this.onConversation({ ...target, closedCode: 'conversation_closed' }, async (c, agent, unit, now) => {
      if (c.status === 'completed' || c.status === 'abandoned') {
        throw new ConflictError('conversation_closed', `The conversation is ${c.status}`);
      }
      if (c.turnCount + 1 > this.maxTurns) throw new LimitError(`The conversation has reached its limit of ${this.maxTurns} turns`);
      const by = target.actor;
      const shown = author ?? (by?.kind === 'person' ? (by.email ?? by.subject) : 'operator');
      const turn: TurnRow = { idx: c.turnCount, role: 'agent', message, timestamp: now, phase: c.phase, options: [], author: shown };
      // Kept masked under the agent's privacy policy (docs/privacy.md); a channel is sent the words as written.
      const masker = maskerOf(await this.privacy.masking(target.tenantId, agent));
      const kept: TurnRow = masker ? { ...turn, message: masker.text(message) } : turn;
      // The operator's words are chained into the audit log like the dialogue's own turns.
      const audit: AuditDraft[] = [
        {
          type: 'operator_message',
          turnIndex: null,
          timestamp: now,
          durationMs: null,
          data: {
            author: shown,
            ...(by ? { actor: by } : {}),
            turns: [{ index: turn.idx, hash: turnHash(c.id, kept) }],
            ...(masker?.masked ? { masked: masker.counts } : {}),
          },
        },
      ];
      const next: Conversation = {
        ...c,
        turnCount: c.turnCount + 1,
        auditSeq: c.auditSeq + audit.length,
        updatedAt: now,
        // A person answering an escalated conversation silences the agent's automatic reply to it.
        flow: c.status === 'escalated' ? { ...c.flow, answered: true } : c.flow,
      };
      await unit.commit({
        conversation: next,
        isNew: false,
        expectedAuditSeq: c.auditSeq,
        previousAuditHash: c.auditHash,
        stored: c,
        turns: [kept],
        audit,
        requestId,
        events: [turnEvent(kept)],
      });
      return {
        stored: c,
        turn,
        answer: {
          conversation_id: c.id,
          turn_index: turn.idx,
          turn: { role: 'agent' as const, message, timestamp: now, phase: c.phase, options: [], author: turn.author! },
        },
      };
    });
    if (this.onOperatorMessage) await this.onOperatorMessage(stored, turn);
    return answer;
  }

  async erase(target: OperatorTarget): Promise<void> {
    await this.onConversation(target, (c, _agent, unit, now) => unit.erase(c, now, ERASURE));
  }

  /**
   * Erases every conversation of one end user of a tenant, across agents: in batches, each batch
   * one transaction over all its conversations (ConversationStore.eraseMany).
   */
  async eraseUser(tenantId: string, userId: string): Promise<number> {
    const ids = await this.store.idsOfUser(tenantId, userId);
    return this.store.eraseMany(tenantId, ids, {
      accept: (c) => !c.erasedAt && c.userId === userId,
      now: () => iso(this.clock.now()),
      rules: ERASURE,
    });
  }

  /**
   * One pass of the sweeper: abandons conversations past their inactivity deadline and erases
   * closed ones past their retention. Each conversation is handled under its lock and checked
   * again there, so with several processes each is swept exactly once (on PostgreSQL a row
   * another process holds is skipped, not waited for).
   */
  async sweep(
    limit = 200,
  ): Promise<{ abandoned: number; erased: number; expiredKeys: number; partitionsMade: string[]; historyDropped: { partitions: string[]; rows: number } }> {
    const now = iso(this.clock.now());
    // Idempotency records outlive their keep time by at most one sweep interval per batch.
    const expiredKeys =
      this.retention.idempotencyHours > 0
        ? await this.store.deleteIdempotencyBefore(iso(new Date(this.clock.now().getTime() - this.retention.idempotencyHours * 3_600_000)), limit * 5)
        : 0;
    let abandoned = 0;
    // Deadlines a version before migration 023 left unfiled or misfiled (a rolling upgrade).
    await this.store.fileDeadlines(now, limit * 5);
    for (const due of await this.store.dueForAbandonment(now, limit)) {
      const done = await this.store.exclusive(
        `conv:${due.id}`,
        { tenantId: due.tenantId, id: due.id },
        async (unit) => {
          const c = await unit.load(due.tenantId, null, due.id);
          if (!c) return false;
          const agent = await this.agents.compiledVersion(c.tenantId, c.agentId, c.agentVersion);
          return abandonIfDue(unit, { conversation: c, agent, now: iso(this.clock.now()), requestId: `sweeper:${randomUUID()}` });
        },
        { skipIfBusy: true },
      );
      if (done) abandoned++;
    }
    let erased = 0;
    const eraseAll = async (days: number, tenantId?: string, exclude: string[] = []) => {
      if (days <= 0) return;
      const before = iso(new Date(this.clock.now().getTime() - days * 86_400_000));
      const byTenant = new Map<string, string[]>();
      for (const due of await this.store.dueForRetention({ before, limit, tenantId, excludeTenants: exclude })) {
        byTenant.set(due.tenantId, [...(byTenant.get(due.tenantId) ?? []), due.id]);
      }
      for (const [tenant, ids] of byTenant) {
        erased += await this.store.eraseMany(tenant, ids, {
          accept: (c) => !c.erasedAt && c.updatedAt < before,
          now: () => iso(this.clock.now()),
          rules: ERASURE,
          skipIfBusy: true,
        });
      }
    };
    const overridden = Object.keys(this.retention.tenants);
    for (const [tenant, days] of Object.entries(this.retention.tenants)) await eraseAll(days, tenant);
    await eraseAll(this.retention.days, undefined, overridden);
    // Last: a failure of it (a partition's table busy past its lock timeout) leaves the rest done.
    const { historyDays } = this.retention;
    const history = await this.store.maintainHistory(
      this.clock.now().getTime(),
      historyDays > 0 ? iso(new Date(this.clock.now().getTime() - historyDays * 86_400_000)) : null,
      limit * 25,
    );
    return { abandoned, erased, expiredKeys, partitionsMade: history.made, historyDropped: { partitions: history.partitions, rows: history.rows } };
  }
}
