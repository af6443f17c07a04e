// Agent definitions: validation, versioning, and the cache of compiled versions (templates
// parsed, router trained) that every converse call reads.
import { LRUCache } from 'lru-cache';
import { AgentDefinition, type Agent, type AgentVersionSummary, type DefinitionWarning, type TestCase, type TestResults, type VersionState } from '@switchboard/contract';
import { capabilityId, compileAgent, knowledgeSourcesOf, routingInput, semanticRouter, validateDefinition, type CompiledAgent } from '../../engine/compile.js';
import type { Router } from '../../engine/router/index.js';
import { NO_VECTORS, type VectorsStatus } from '../../engine/word-vectors.js';
import { routingWarnings, slotWarnings } from '../../engine/report.js';
import { runTests } from './test-runner.js';
import type { Trainer } from './training.js';
import type { ServerEmbeddings } from './server-embeddings.js';
import { DefinitionError, InputError, NotFoundError, type FieldProblem } from '../../errors.js';
import { definitionProblems } from '../../engine/definition-problems.js';
import { literalHost, type HostChecker } from '../../actions/ssrf.js';
import type { RenderBudgets } from '../render-budgets.js';
import { canonicalJson, sha256 } from '../../lib/canonical.js';
import { iso, type Clock } from '../../lib/clock.js';
import type { AgentRow, AgentStore, ListedVersionRow, ReleaseChange, StepInput } from '../../store/agents/agent-store.js';
import type { PrefetchedConversation } from '../../store/conversations/conversation-store.js';
import type { ReleaseRow } from '../../store/release-store.js';
import type { RouterStore } from '../../store/agents/router-store.js';
import type { Logger } from 'pino';
import { ReleasedBytes } from '../../lib/collect.js';
import { RouterService } from './routers.js';
import { privacyProblems } from '../privacy/policy.js';

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

export interface AgentServiceOptions {
  /** Trains routers (a worker pool in the server); in this thread when absent. */
  trainer?: Trainer;
  /** Bytes of compiled versions kept in memory; the least recently used go first. */
  cacheBytes?: number;
  /** The models a definition's `llm.model` may name (the server's model gate); any when absent (no model server). */
  models?: readonly string[];
  /** Render budgets of test conversations' turns: the tenant's share, as live turns. */
  renderBudgets?: RenderBudgets;
  /** Where trained routers are stored and loaded; every process trains its own when absent. */
  routers?: RouterStore;
  log?: Pick<Logger, 'warn' | 'info'>;
  /** Checks whether this tenant's actions may reach the hosts a definition names (the action address policy); unchecked when absent. */
  hosts?: { checker: HostChecker; grants: (tenantId: string) => readonly string[] };
  /** The model server's embeddings (LLM_EMBEDDINGS_MODEL): each version also gets a router of them, trained in the background. */
  embeddings?: ServerEmbeddings;
  /** The app's word vectors (ROUTER_VECTORS) and why there are none; none when absent. */
  words?: VectorsStatus;
  /** Told the bytes of each compiled version the cache lets go of, so that their memory is collected soon after; one watching this cache's bound by default. */
  released?: ReleasedBytes;
  /** Whether a privacy policy's `hash` has a key (SECRETS_KEY). */
  hashKeyed?: boolean;
}

/**
 * Buffer memory beyond the compiled versions' own allowed before a collection is asked for (the
 * word vectors and other buffers among it): an eighth of the cache, from 8 to 32 MiB, looked at
 * after every 4 MiB evicted (docs/performance.md, "Cold starts and many tenants").
 */
const releasedSlack = (cacheBytes: number) => Math.min(32 * 1048576, Math.max(8 * 1048576, cacheBytes / 8));

/** Distinct hosts of one definition checked for reachability (each may wait for DNS). */
const MAX_HOSTS_CHECKED = 10;

/** Steps of test conversations one request may run, all its tests together. */
const MAX_TEST_STEPS = 1_000;

/** Test conversations run in one request (or stored as an agent's suite) have at most MAX_TEST_STEPS steps in all. */
export function checkTestSteps(tests: TestCase[]): void {
  const steps = tests.reduce((n, t) => n + t.steps.length, 0);
  if (steps > MAX_TEST_STEPS) {
    throw new InputError(`The tests have ${steps} steps in all`, [
      { path: 'tests', message: `at most ${MAX_TEST_STEPS} steps in one request: send them in several` },
    ]);
  }
}

export class AgentService {
  /**
   * Compiled versions are immutable, so an entry never goes stale; only bytes bound the cache (one
   * large agent weighs as much as thousands of small ones). An evicted one compiles again when asked.
   */
  private readonly compiled: LRUCache<string, CompiledAgent>;
  /** Asks for a collection when evicted versions' buffers, not yet freed, pass the cache's slack (lib/collect.ts). */
  private readonly released: ReleasedBytes;
  /** Agents' slugs by tenant and id (a slug never changes), for labelling metrics. */
  private readonly slugs = new LRUCache<string, string>({ max: 10_000 });
  /** Compilations under way, so concurrent first messages share one. */
  private readonly compiling = new Map<string, Promise<CompiledAgent>>();
  /** Loads, trains, converts and stores the routers of the versions compiled here. */
  readonly routers: RouterService;
  /** The app's word vectors. */
  private readonly words: VectorsStatus;
  /** Where each compiled version came from (its cache key, tenant and digest), for its router of server embeddings. */
  private readonly origins = new WeakMap<CompiledAgent, { key: string; tenantId: string; digest: string }>();

  constructor(
    private readonly store: AgentStore,
    private readonly clock: Clock,
    private readonly opts: AgentServiceOptions = {},
  ) {
    this.words = opts.words ?? NO_VECTORS;
    this.routers = new RouterService(clock, {
      trainer: opts.trainer,
      store: opts.routers,
      embeddings: opts.embeddings,
      log: opts.log,
      words: opts.words?.vectors ?? null,
    });
    const cacheBytes = opts.cacheBytes ?? 512 * 1048576;
    this.released = opts.released ?? new ReleasedBytes({ held: () => this.compiled.calculatedSize, slack: releasedSlack(cacheBytes), checkEvery: 4 * 1048576 });
    this.compiled = new LRUCache<string, CompiledAgent>({
      maxSize: cacheBytes,
      sizeCalculation: (a) => Math.max(1, a.bytes),
      // Evicted, or replaced by a version compiled around a retrained router.
      dispose: (a, _key, reason) => {
        if (reason !== 'fetch') this.released.add(a.bytes);
      },
    });
  }

  async put(
    tenantId: string,
    slug: string,
    definition: AgentDefinition,
    /** `note`: what made the version, kept beside it when the definition is a new one. */
    opts: { activate?: boolean; step?: StepInput; expectCurrent?: number | null; note?: string } = {},
  ): Promise<{ agent: Agent; changed: boolean; version: number; warnings: DefinitionWarning[]; release: ReleaseRow | null }> {
    const problems = [...validateDefinition(definition), ...this.modelProblems(definition), ...privacyProblems(definition.privacy, 'privacy', !!this.opts.hashKeyed)];
    if (problems.length) throw new DefinitionError(problems);
    const digest = sha256(canonicalJson(definition));
    const existing = await this.store.bySlug(tenantId, slug);
    const current = existing ? await this.store.version(tenantId, existing.id, existing.currentVersion) : null;
    // An unchanged definition's hosts were checked when it was stored: not asked again.
    const unchanged = current?.digest === digest;
    const warnings = [...routingWarnings(definition), ...slotWarnings(definition), ...(unchanged ? [] : await this.hostWarnings(tenantId, definition))];
    // A new definition is trained before it is stored: one over the training budget is refused
    // and changes nothing. The agent id it is compiled under is only known once it is stored,
    // so the trained router is reused through the cache when the ids agree.
    let trained: CompiledAgent | null = null;
    if (!current || current.digest !== digest) {
      // A router stored by an older model is trained again and stored for the other processes;
      // this one keeps the stored one until the version leaves its cache.
      trained = await compileAgent(
        existing?.id ?? NIL_UUID,
        0,
        definition,
        this.routers.routerFor(tenantId, digest, () => undefined),
        this.words,
      );
    }
    const { agent, changed, version, release, knowledge } = await this.store.put(
      tenantId,
      slug,
      definition,
      digest,
      iso(this.clock.now()),
      opts.activate ?? true,
      opts.step,
      opts.expectCurrent,
      opts.note,
      definition.knowledge_updates === 'release' ? knowledgeSourcesOf(definition) : null,
    );
    const key = `${tenantId}:${agent.id}:${version}`;
    if (trained && !this.compiled.has(key)) {
      const compiled = await compileAgent(agent.id, version, definition, () => Promise.resolve(trained.router), this.words);
      compiled.knowledgeSnapshot = knowledge?.snapshot ?? null;
      this.cache(key, tenantId, digest, compiled);
    }
    await this.compiledVersion(tenantId, agent.id, version);
    const shown =
      version === agent.currentVersion ? definition : ((await this.store.version(tenantId, agent.id, agent.currentVersion))!.definition as AgentDefinition);
    return { agent: this.toApi(agent, shown), changed, version, warnings, release };
  }

  /**
   * Every problem of a definition as sent, when its schema refused it: the schema's and those
   * found in the rest (references, templates, models), in one answer.
   */
  problemsOf(raw: unknown): FieldProblem[] {
    const llm = raw && typeof raw === 'object' ? (raw as { llm?: unknown }).llm : undefined;
    const model = llm && typeof llm === 'object' ? (llm as { model?: unknown }).model : undefined;
    return [...definitionProblems(raw).problems, ...(typeof model === 'string' ? this.modelProblems({ llm: { model } }) : [])];
  }

  private modelProblems(definition: { llm?: { model?: string | null } }): FieldProblem[] {
    const model = definition.llm?.model;
    if (!model || !this.opts.models || this.opts.models.includes(model)) return [];
    return [{ path: 'llm.model', message: `"${model}" is not offered by this server (LLM_MODELS: ${this.opts.models.join(', ')})` }];
  }

  /**
   * An agent's versions, newest first, a page at a time (`before`: the last version of the
   * previous page), each with its state and what made it.
   */
  async versions(tenantId: string, slug: string, page: { limit: number; before: number | null }): Promise<AgentVersionSummary[]> {
    const row = await this.any(tenantId, slug);
    return (await this.listed(row, page)).map((v) => v.summary);
  }

  private async listed(row: AgentRow, page: { limit: number; before: number | null }): Promise<{ row: ListedVersionRow; summary: AgentVersionSummary }[]> {
    const [rows, newest] = await Promise.all([this.store.versions(row.tenantId, row.id, page), this.store.newestVersion(row.tenantId, row.id)]);
    const stateOf = (v: ListedVersionRow): VersionState => {
      if (v.version === row.currentVersion) return 'current';
      if (v.version === row.split?.version) return 'split_candidate';
      if (v.released) return 'released_before';
      // The version review actions add to (draftOrCurrent).
      if (v.version === newest && v.version > row.currentVersion) return 'draft';
      return 'never_released';
    };
    return rows.map((v) => ({
      row: v,
      summary: {
        version: v.version,
        created_at: v.createdAt,
        current: v.version === row.currentVersion,
        state: stateOf(v),
        note: v.note,
        capabilities: (v.definition as AgentDefinition).capabilities.map((c) => c.name),
        knowledge: v.knowledge,
      },
    }));
  }

  /**
   * One stored version (404 when there is none), in one query, for releases, replays and evaluations. Its `digest`
   * covers the pinned knowledge too, if any (an evaluation of the definition over other passages is another one).
   */
  async version(tenantId: string, slug: string, version: number): Promise<{ version: number; digest: string; definition: AgentDefinition }> {
    const row = await this.any(tenantId, slug);
    const v = await this.store.version(tenantId, row.id, version);
    if (!v) throw new NotFoundError('version_not_found', `Agent "${slug}" has no version ${version}`);
    const digest = v.knowledge ? sha256(`${v.digest}\nknowledge ${v.knowledge.digest}`) : v.digest;
    return { version: v.version, digest, definition: v.definition as AgentDefinition };
  }

  /** One version as GET …/versions/:version shows it: its state, what made it, and the hosts it names that this tenant may not reach, checked now. */
  async versionWithWarnings(tenantId: string, slug: string, version: number) {
    const row = await this.any(tenantId, slug);
    const v = (await this.listed(row, { limit: 1, before: version + 1 })).at(0);
    if (!v || v.row.version !== version) throw new NotFoundError('version_not_found', `Agent "${slug}" has no version ${version}`);
    const definition = v.row.definition as AgentDefinition;
    return { ...v.summary, digest: v.row.digest, definition, warnings: await this.hostWarnings(tenantId, definition) };
  }

  /**
   * A warning for each host an action or webhook names (as plain text) that this tenant may not
   * reach: calls to it would be refused (a private address not in ACTION_ALLOWED_HOSTS) or
   * fail (a name that does not resolve). The wording is the same in both cases, as for a call,
   * so that warnings cannot map the operator's network. The checks are bounded (HostChecker):
   * a host whose check could not be made now is said to be not checked, never unreachable.
   */
  async hostWarnings(tenantId: string, definition: AgentDefinition): Promise<DefinitionWarning[]> {
    const hostsOpt = this.opts.hosts;
    if (!hostsOpt) return [];
    const hosts = new Map<string, { host: string; port: string; shown: string; paths: string[] }>();
    const add = (url: string, path: string) => {
      const h = literalHost(url);
      if (!h) return;
      const key = `${h.host}:${h.port}`;
      const seen = hosts.get(key) ?? { ...h, paths: [] };
      seen.paths.push(path);
      hosts.set(key, seen);
    };
    for (const [name, a] of Object.entries(definition.actions ?? {})) add(a.url, `actions.${name}.url`);
    (definition.webhooks ?? []).forEach((w, i) => add(w.url, `webhooks[${i}].url`));
    const checked = [...hosts.values()].slice(0, MAX_HOSTS_CHECKED);
    const grants = hostsOpt.grants(tenantId);
    const found = await Promise.all(checked.map((h) => hostsOpt.checker.check(tenantId, grants, h.host, h.port)));
    const out: DefinitionWarning[] = [];
    const notChecked: string[] = [];
    checked.forEach((h, j) => {
      const r = found[j];
      if (r.result === 'reachable') return;
      if (r.result === 'not_checked') {
        notChecked.push(`${h.shown} (${r.why})`);
        return;
      }
      out.push({
        code: 'unreachable_host',
        path: h.paths[0],
        message: `${h.shown} is not reachable for this tenant (unknown host, or a private address not in ACTION_ALLOWED_HOSTS): every call to it will fail (${h.paths.join(', ')})`,
      });
    });
    if (notChecked.length) out.push({ code: 'host_not_checked', message: `not checked: ${notChecked.join('; ')}` });
    if (hosts.size > MAX_HOSTS_CHECKED) {
      out.push({ code: 'host_not_checked', message: `${hosts.size - MAX_HOSTS_CHECKED} more host(s) not checked (at most ${MAX_HOSTS_CHECKED} a definition)` });
    }
    return out;
  }

  /** Runs test conversations against a version (the current one by default) in memory. */
  async test(tenantId: string, slug: string, body: { version?: number; tests: TestCase[] }): Promise<TestResults> {
    checkTestSteps(body.tests);
    const row = await this.active(tenantId, slug);
    const version = body.version ?? row.currentVersion;
    const agent = await this.compiledVersion(tenantId, row.id, version);
    const budgets = this.opts.renderBudgets?.of(tenantId);
    return await runTests(agent, body.tests, { version, clock: () => this.clock.now(), budgets });
  }

  /** The agent's draft (its newest stored version, when newer than the current one), else its current version. */
  async draftOrCurrent(tenantId: string, slug: string): Promise<{ version: number; definition: AgentDefinition }> {
    const row = await this.active(tenantId, slug);
    const newest = await this.store.newestVersion(tenantId, row.id);
    const v = (await this.store.version(tenantId, row.id, newest > row.currentVersion ? newest : row.currentVersion))!;
    return { version: v.version, definition: v.definition as AgentDefinition };
  }

  /**
   * Makes a version current or sets or ends a split, with its step of the release record
   * (service/releases.ts judges the gates first). The version a change sends conversations to is
   * compiled (its router trained) before the change: the first conversation on it does not wait.
   */
  async release(tenantId: string, slug: string, row: AgentRow, change: ReleaseChange): Promise<{ agent: Agent; release: ReleaseRow }> {
    const target = change.current ?? change.split?.version;
    if (target !== undefined) await this.compiledVersion(tenantId, row.id, target);
    const done = await this.store.release(tenantId, row.id, change);
    if (!done) throw new NotFoundError('version_not_found', `Agent "${slug}" has no version ${target ?? row.currentVersion}`);
    const v = await this.store.version(tenantId, row.id, done.agent.currentVersion);
    return { agent: this.toApi(done.agent, v!.definition as AgentDefinition), release: done.release };
  }

  async get(tenantId: string, slug: string): Promise<Agent> {
    const row = await this.active(tenantId, slug);
    const v = await this.store.version(tenantId, row.id, row.currentVersion);
    return this.toApi(row, v!.definition as AgentDefinition);
  }

  async list(tenantId: string): Promise<Agent[]> {
    const rows = await this.store.list(tenantId);
    return Promise.all(rows.map(async (r) => this.toApi(r, (await this.store.version(tenantId, r.id, r.currentVersion))!.definition as AgentDefinition)));
  }

  async archive(tenantId: string, slug: string): Promise<void> {
    if (!(await this.store.archive(tenantId, slug, iso(this.clock.now())))) {
      throw new NotFoundError('agent_not_found', `No agent "${slug}"`);
    }
  }

  /** The current version of the agent with this slug, or null when there is none. */
  async currentVersion(tenantId: string, slug: string): Promise<number | null> {
    return (await this.store.bySlug(tenantId, slug))?.currentVersion ?? null;
  }

  /** The live (not archived) agent with this slug, or 404. */
  async active(tenantId: string, slug: string): Promise<AgentRow> {
    return this.live(tenantId, slug, await this.store.bySlug(tenantId, slug));
  }

  /**
   * The live agent with this slug, or 404, and the row of its conversation `conversationId` where
   * the database reads both in one round trip (PostgreSQL; ConversationStore.exclusive's `read`).
   */
  async activeWithConversation(tenantId: string, slug: string, conversationId: string): Promise<{ agent: AgentRow; conversation?: PrefetchedConversation }> {
    const r = await this.store.bySlugWithConversation(tenantId, slug, conversationId);
    return { agent: this.live(tenantId, slug, r.agent), conversation: r.conversation };
  }

  private live(tenantId: string, slug: string, row: AgentRow | null): AgentRow {
    if (!row || row.archivedAt) throw new NotFoundError('agent_not_found', `No agent "${slug}"`);
    this.slugs.set(`${tenantId}:${row.id}`, row.slug);
    return row;
  }

  /** The slug of an agent (null when there is none with that id). */
  async slugOf(tenantId: string, agentId: string): Promise<string | null> {
    const key = `${tenantId}:${agentId}`;
    const hit = this.slugs.get(key);
    if (hit) return hit;
    const slug = await this.store.slugOf(tenantId, agentId);
    if (slug) this.slugs.set(key, slug);
    return slug;
  }

  /** The agent with this slug, archived or not: its conversations stay readable. */
  async any(tenantId: string, slug: string): Promise<AgentRow> {
    const row = await this.store.bySlug(tenantId, slug);
    if (!row) throw new NotFoundError('agent_not_found', `No agent "${slug}"`);
    return row;
  }

  /** A compiled version, built once per process and cached while memory allows; 404 `version_not_found` when the agent has none. */
  compiledVersion(tenantId: string, agentId: string, version: number): Promise<CompiledAgent> {
    const key = `${tenantId}:${agentId}:${version}`;
    const hit = this.compiled.get(key);
    if (hit) return Promise.resolve(hit);
    let p = this.compiling.get(key);
    if (!p) {
      p = this.store
        .version(tenantId, agentId, version)
        .then((v) => {
          if (!v) {
            const slug = this.slugs.get(`${tenantId}:${agentId}`);
            throw new NotFoundError('version_not_found', `Agent ${slug ? `"${slug}"` : agentId} has no version ${version}`);
          }
          const definition = AgentDefinition.parse(v.definition);
          // Retrained in the background (a router of an older model): the version is compiled
          // again around the new router, and replaces this one in the cache.
          const swap = (router: Router) =>
            void compileAgent(agentId, version, definition, () => Promise.resolve(router), this.words).then(
              (c) => {
                c.knowledgeSnapshot = v.knowledge?.snapshot ?? null;
                if (this.compiled.has(key)) this.cache(key, tenantId, v.digest, c);
              },
              (err: unknown) =>
                this.opts.log?.warn(
                  { err, tenant: tenantId, agent: agentId, version },
                  'compiling around a retrained router failed: the stored one goes on answering',
                ),
            );
          return compileAgent(agentId, version, definition, this.routers.routerFor(tenantId, v.digest, swap), this.words).then((compiled) => {
            compiled.knowledgeSnapshot = v.knowledge?.snapshot ?? null;
            return this.cache(key, tenantId, v.digest, compiled);
          });
        })
        .finally(() => this.compiling.delete(key));
      this.compiling.set(key, p);
    }
    return p;
  }

  /**
   * Caches a compiled version and, with server embeddings, gives it its router of them once that
   * is loaded or trained (until then, and whenever a message's embedding fails, its own router answers).
   */
  private cache(key: string, tenantId: string, digest: string, compiled: CompiledAgent): CompiledAgent {
    this.compiled.set(key, compiled);
    this.origins.set(compiled, { key, tenantId, digest });
    if (this.opts.embeddings && compiled.routable.length > 0) this.attachSemantic(compiled);
    return compiled;
  }

  /** Gives a compiled version its router of server embeddings once it is loaded or trained (of `dims` numbers, when known). */
  private attachSemantic(compiled: CompiledAgent, dims?: number): void {
    const { key, tenantId, digest } = this.origins.get(compiled)!;
    void this.routers.semanticFor(tenantId, digest, routingInput(compiled.definition), dims).then((router) => {
      if (!router || compiled.semantic) return;
      compiled.semantic = semanticRouter(compiled.definition, router);
      compiled.bytes += router.bytes;
      // Weighed again with its second router, if it is still cached.
      if (this.compiled.peek(key) === compiled) this.compiled.set(key, compiled);
    });
  }

  /**
   * A message's embedding had another length than the version's router of server embeddings was
   * trained on: the model behind the name has changed. The version drops that router (its own
   * answers) and one is trained for the new length, replacing the stored one, as often as the
   * routers service allows (mayRetrainSemantic).
   */
  semanticMismatch(compiled: CompiledAgent, dims: number): void {
    const origin = this.origins.get(compiled);
    const semantic = compiled.semantic;
    if (!origin || !semantic || semantic.router.dims === dims) return;
    compiled.semantic = null;
    compiled.bytes = Math.max(1, compiled.bytes - semantic.router.bytes);
    const error = `the model server now answers embeddings of ${dims} numbers; the router was trained on ${semantic.router.dims}`;
    if (!this.routers.mayRetrainSemantic(origin.tenantId, origin.digest, error)) return;
    this.opts.log?.warn({ tenant: origin.tenantId, digest: origin.digest, dims, trained: semantic.router.dims }, `${error}: training it again`);
    this.attachSemantic(compiled, dims);
  }

  /** Why a compiled version has no router of server embeddings: still training, or its training failed (with the reason). */
  semanticUnavailable(compiled: CompiledAgent): string | null {
    if (compiled.semantic) return null;
    const origin = this.origins.get(compiled);
    const failed = origin ? this.routers.semanticFailure(origin.tenantId, origin.digest) : null;
    return failed ? `training the router of server embeddings failed: ${failed}` : 'the router of server embeddings is being trained';
  }

  /** How this process came by its routers (switchboard_routers_total). */
  get routerCounts() {
    return this.routers.counts;
  }

  /** Bytes of compiled versions held now. */
  get cachedBytes(): number {
    return this.compiled.calculatedSize;
  }

  /** Garbage collections asked for after evictions. */
  get collectionsAsked(): number {
    return this.released.collections;
  }

  private toApi(row: AgentRow, def: AgentDefinition): Agent {
    return {
      id: row.id,
      slug: row.slug,
      name: def.name,
      description: def.description ?? null,
      version: row.currentVersion,
      capabilities: def.capabilities.map((c) => ({ id: capabilityId(row.id, c.name), name: c.name, description: c.description ?? null })),
      definition: def,
      split: row.split && { version: row.split.version, percent: row.split.share / 100, started_at: row.split.startedAt },
      created_at: row.createdAt,
      updated_at: row.updatedAt,
    };
  }
}
