// The review inbox (docs/improving.md): groups of user messages the agent's turns showed are worth
// a look (service/review-findings.ts finds them as each turn is written), and what reviewers do
// with them: add a message to a capability's examples or to the agent's out-of-scope messages in
// the draft, or dismiss it. Also the agent's stored test conversations, which evaluations run.
import {
  ReviewReason,
  type AgentDefinition,
  type ReviewAction,
  type ReviewActionResult,
  type ReviewItem,
  type ReviewPage,
  type TestCase,
} from '@switchboard/contract';
import { createTwoFilesPatch } from 'diff';
import { stringify as toYaml } from 'yaml';
import { InputError, NotFoundError, ReviewClosedError } from '../../errors.js';
import { iso, type Clock } from '../../lib/clock.js';
import { decodeCursor, isTimeAndId, pageOf } from '../../lib/cursor.js';
import { KeyedLock } from '../../lib/keyed-lock.js';
import type { ReviewGroupRow, ReviewOccurrenceRow, ReviewStore } from '../../store/review/review-store.js';
import type { TestSuiteStore } from '../../store/review/test-suite-store.js';
import { checkTestSteps, type AgentService } from '../agents/agent-service.js';

/** Occurrences shown with each item. */
const SHOWN = 3;

const STATUS_OF = { add_example: 'added', add_out_of_scope: 'out_of_scope', dismiss: 'dismissed' } as const;

/** An example as the router compares them: the same words in another case or spacing are the same example. */
const sameExample = (a: string, b: string) => a.trim().replace(/\s+/g, ' ').toLowerCase() === b.trim().replace(/\s+/g, ' ').toLowerCase();

export class ReviewService {
  /** One action per agent at a time in this process: two reviewers' drafts are made one after the other. */
  private readonly locks = new KeyedLock();

  constructor(
    private readonly deps: {
      agents: AgentService;
      store: ReviewStore;
      suites: TestSuiteStore;
      clock: Clock;
      log: { info(o: object, m: string): void };
    },
  ) {}

  async list(
    tenantId: string,
    slug: string,
    q: { reason?: ReviewReason; status: ReviewItem['status']; since?: string; until?: string; limit: number; cursor?: string },
  ): Promise<ReviewPage> {
    const agent = await this.deps.agents.any(tenantId, slug);
    const filter = {
      status: q.status,
      since: q.since ? iso(new Date(q.since)) : undefined,
      until: q.until ? iso(new Date(q.until)) : undefined,
    };
    const after = decodeCursor(q.cursor, isTimeAndId);
    const cappedSince = filter.since ?? iso(new Date(this.deps.clock.now().getTime() - 7 * 86_400_000));
    const [rows, counted, capped] = await Promise.all([
      this.deps.store.list(tenantId, agent.id, { ...filter, reason: q.reason }, { limit: q.limit + 1, after }),
      this.deps.store.counts(tenantId, agent.id, filter),
      this.deps.store.capped(tenantId, agent.id, { since: cappedSince, until: filter.until }),
    ]);
    const { page, next_cursor } = pageOf(rows, q.limit, (last) => [last.lastSeenAt, last.id]);
    const occurrences = await this.deps.store.occurrences(tenantId, agent.id, page, SHOWN);
    const counts = Object.fromEntries(ReviewReason.options.map((r) => [r, { items: 0, messages: 0 }])) as ReviewPage['counts'];
    for (const c of counted) if (c.reason in counts) counts[c.reason as ReviewReason] = { items: c.items, messages: c.messages };
    return {
      // A group whose occurrences were all erased meanwhile has nothing to show.
      data: page.flatMap((g) => {
        const occ = occurrences.get(g.id) ?? [];
        return occ.length || g.status !== 'open' ? [toItem(g, occ)] : [];
      }),
      counts,
      capped: { per_conversation: capped.capped_conv, per_agent_hour: capped.capped_hour, since: `${cappedSince.slice(0, 13)}:00:00.000Z` },
      next_cursor,
    };
  }

  /**
   * Acts on open items. Adding changes the draft: the newest stored version when it is newer than
   * the current one, else the current one; the definition with the messages added is stored as a
   * new version that is not current (trained within the tenant's budget like any PUT).
   */
  async act(tenantId: string, slug: string, body: ReviewAction, keyId: string | null): Promise<ReviewActionResult> {
    const agent = await this.deps.agents.active(tenantId, slug);
    return this.locks.run(`${tenantId}:${agent.id}`, async () => {
      const ids = [...new Set(body.items)];
      const groups = await this.deps.store.groupsById(tenantId, agent.id, ids);
      // In the order the reviewer gave, so that the draft's lists (and its diff) read the same every time.
      const open = groups.filter((g) => g.status === 'open').sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id));
      if (open.length !== ids.length) {
        const found = new Set(open.map((g) => g.id));
        const missing = ids.filter((id) => !groups.some((g) => g.id === id));
        if (missing.length) throw new NotFoundError('review_item_not_found', `No review item ${missing.join(', ')} of agent "${slug}"`);
        throw new ReviewClosedError(ids.filter((id) => !found.has(id)));
      }
      const newest = await this.deps.store.occurrences(tenantId, agent.id, open, 1);
      const examples = open.map((g) => ({ group: g, example: newest.get(g.id)?.[0]?.message ?? null }));
      const erased = examples.filter((e) => e.example === null).map((e) => e.group.id);
      if (erased.length && body.action !== 'dismiss') throw new ReviewClosedError(erased);

      let draft: ReviewActionResult['draft'] = null;
      if (body.action !== 'dismiss')
        draft = await this.changeDraft(
          tenantId,
          slug,
          body,
          examples.map((e) => e.example!),
        );
      const at = iso(this.deps.clock.now());
      const acted = await this.deps.store.transaction((trx) =>
        this.deps.store.act(
          trx,
          tenantId,
          agent.id,
          examples.map(({ group, example }) => ({
            id: group.id,
            groupKey: group.groupKey,
            status: STATUS_OF[body.action],
            action: {
              action: body.action,
              ...(body.capability ? { capability: body.capability } : {}),
              ...(example !== null && body.action !== 'dismiss' ? { example } : {}),
              ...(draft ? { version: draft.version } : {}),
            },
          })),
          { keyId, at },
        ),
      );
      this.deps.log.info(
        { tenant: tenantId, agent: slug, action: body.action, capability: body.capability, items: acted, key: keyId, draft: draft?.version ?? null },
        'review items acted on',
      );
      return { acted, draft };
    });
  }

  private async changeDraft(tenantId: string, slug: string, body: ReviewAction, messages: string[]): Promise<ReviewActionResult['draft']> {
    const base = await this.deps.agents.draftOrCurrent(tenantId, slug);
    const before = base.definition;
    const def = structuredClone<AgentDefinition>(before);
    const added: { path: string; example: string }[] = [];
    const unchanged: { path: string; example: string }[] = [];
    let list: string[];
    let path: string;
    if (body.action === 'add_example') {
      const idx = def.capabilities.findIndex((c) => c.name === body.capability);
      if (idx < 0) {
        throw new InputError(`The draft (version ${base.version}) has no capability "${body.capability}"`, [
          { path: 'capability', message: `must be one of ${def.capabilities.map((c) => c.name).join(', ')}` },
        ]);
      }
      const cap = def.capabilities[idx];
      list = cap.examples = [...(cap.examples ?? [])];
      path = `capabilities[${idx}].examples`;
    } else {
      def.routing = { ...(def.routing ?? {}) };
      list = def.routing.out_of_scope = [...(def.routing.out_of_scope ?? [])];
      path = 'routing.out_of_scope';
    }
    for (const m of messages) {
      const example = m.trim();
      if (list.some((e) => sameExample(e, example))) unchanged.push({ path, example });
      else {
        list.push(example);
        added.push({ path, example });
      }
    }
    if (added.length === 0) return null;
    const what = body.action === 'add_example' ? `examples of ${body.capability}` : 'out of scope';
    const note = `review: ${added.length} message${added.length === 1 ? '' : 's'} added as ${what} to version ${base.version}`;
    const stored = await this.deps.agents.put(tenantId, slug, def, { activate: false, note });
    const name = `${slug}.yaml`;
    const diff = createTwoFilesPatch(`${name}@${base.version}`, `${name}@${stored.version}`, toYaml(before), toYaml(def), undefined, undefined, { context: 3 });
    return { version: stored.version, based_on: base.version, added, unchanged, diff };
  }

  async testSuite(tenantId: string, slug: string): Promise<{ tests: TestCase[]; updated_at: string | null }> {
    const agent = await this.deps.agents.any(tenantId, slug);
    const found = await this.deps.suites.testSuite(tenantId, agent.id);
    return { tests: (found?.tests ?? []) as TestCase[], updated_at: found?.updatedAt ?? null };
  }

  async putTestSuite(tenantId: string, slug: string, tests: TestCase[]): Promise<{ tests: TestCase[]; updated_at: string }> {
    checkTestSteps(tests);
    const agent = await this.deps.agents.active(tenantId, slug);
    const now = iso(this.deps.clock.now());
    await this.deps.suites.putTestSuite(tenantId, agent.id, tests, now);
    return { tests, updated_at: now };
  }
}

function toItem(g: ReviewGroupRow, occ: ReviewOccurrenceRow[]): ReviewItem {
  const newest = occ.at(0);
  const a = g.action as {
    action: 'add_example' | 'add_out_of_scope' | 'dismiss';
    capability?: string;
    example?: string;
    version?: number;
    erased?: true;
  } | null;
  const margin = g.reason === 'low_margin' ? (newest?.detail.margin as number | undefined) : undefined;
  return {
    id: g.id,
    reason: g.reason as ReviewReason,
    status: g.status as ReviewItem['status'],
    message: newest?.message ?? a?.example ?? '',
    count: g.count,
    capability: newest?.capability ?? a?.capability ?? '',
    ...(typeof margin === 'number' ? { margin } : {}),
    first_seen_at: g.firstSeenAt,
    last_seen_at: g.lastSeenAt,
    occurrences: occ.map((o) => ({
      conversation_id: o.conversationId,
      turn_index: o.turnIndex,
      audit_sequence: o.auditSequence,
      version: o.version,
      capability: o.capability,
      message: o.message,
      detail: o.detail,
      at: o.createdAt,
    })),
    action: a && g.actedAt ? { ...a, acted_by: g.actedBy, acted_at: g.actedAt } : null,
  };
}
