// The Prometheus metrics of one app (docs/observability.md lists them): prom-client counters,
// histograms and gauges in a registry of the app's own, plus the process's default metrics
// (CPU, memory, event-loop lag, GC), collected once per process. Conversation metrics are read
// off each committed write (the store calls `observeWrite`), so turns, sweeper abandonments and
// operator moves count alike. Counters are per process: sum them across replicas.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TurnWrite } from '../store/writer/turn-rows.js';

export interface MetricsOptions {
  /** Whether series carry the tenant label (METRICS_TENANT_LABEL). */
  tenantLabel: boolean;
  /** The tenant daily token cap of model calls (0: none), exported for alerts. */
  tenantDailyTokens: number;
  /** How many tenants, and names of each kind per tenant, get series of their own (METRICS_MAX_*). */
  labels: { maxTenants: number; maxNamesPerTenant: number };
}

const OTHER = 'other';

/**
 * Label values tenants choose (their ids, agent slugs, capability and action names) given series
 * of their own up to a cap, first come first served in this process; the rest are counted under
 * `other`. Without it one tenant creating names in a loop makes hundreds of thousands of series
 * and a scrape of tens of megabytes. Memory is bounded by the caps.
 */
class LabelBudget {
  private readonly tenants = new Map<string, Map<string, Set<string>>>();
  constructor(private readonly caps: { maxTenants: number; maxNamesPerTenant: number }) {}

  tenant(id: string): string {
    if (this.tenants.has(id)) return id;
    if (this.tenants.size >= this.caps.maxTenants) return OTHER;
    this.tenants.set(id, new Map());
    return id;
  }

  /** `name` of `kind` (agent, capability, action) for the tenant as labelled by `tenant()`. */
  name(tenant: string, kind: string, name: string): string {
    const kinds = this.tenants.get(tenant);
    if (!kinds) return OTHER;
    let names = kinds.get(kind);
    if (!names) kinds.set(kind, (names = new Set()));
    if (names.has(name)) return name;
    if (names.size >= this.caps.maxNamesPerTenant) return OTHER;
    names.add(name);
    return name;
  }
}

/** What a scrape reads from the rest of the app. */
export interface MetricsSources {
  pool(): { used: number; free: number; pendingAcquires: number; pendingCreates: number };
  outboxPending(): Promise<number>;
  openStreams(): number;
  /** Routers this process trained, loaded from storage, and is training again (agent-service.ts). */
  routers?(): { trained: number; stored: number; retrained: number; converted: number };
  /** Bytes of compiled agent versions held (ROUTER_CACHE_MB bounds it). */
  compiledBytes?(): number;
  /** Collections the cache of compiled versions asked for (lib/collect.ts). */
  compiledCollections?(): number;
  /** PostgreSQL: continuing calls' conversation rows, kept or read, and the bytes kept (store/kept-rows.ts). */
  keptRows?(): { readonly tallies: { kept: number; database: number; stale: number }; readonly bytes: number };
  /** PostgreSQL: turn writes that went in batches of several, and the statements that carried them. */
  turnBatches?(): { readonly writes: number; readonly statements: number };
}

let processRegistry: Registry | null = null;
/** The default metrics describe the process, not an app: one registry per process. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

const CLOSING = new Set(['completed', 'escalated', 'abandoned']);
/** The outbox count is a query: scrapes within this many milliseconds share one. */
const OUTBOX_TTL_MS = 5_000;

export class Metrics {
  private readonly registry = new Registry();
  private merged: Registry | null = null;
  private readonly withTenant: boolean;
  readonly httpDuration: Histogram;
  private readonly turns: Counter;
  private readonly masked: Counter;
  private readonly routing: Counter;
  private readonly confidence: Histogram;
  private readonly actionCalls: Counter;
  private readonly actionDuration: Histogram;
  private readonly llmTokens: Counter;
  private readonly llmCalls: Counter;
  private readonly closed: Counter;
  private readonly started: Counter;
  private readonly channelMessages: Counter;
  private readonly channelDeliveries: Counter;
  private readonly outboxAttempts: Counter;
  private readonly internalErrors: Counter;
  /** Tokens each tenant spent today, as last read from the database: tenant → [UTC day, tokens]. */
  private readonly spentToday = new Map<string, [string, number]>();
  private outbox: { at: number; value: Promise<number> } | null = null;
  private readonly names: LabelBudget;

  constructor(opts: MetricsOptions, sources: MetricsSources) {
    this.withTenant = opts.tenantLabel;
    this.names = new LabelBudget(opts.labels);
    const t = (labels: string[]) => (this.withTenant ? ['tenant', ...labels] : labels);
    const registers = [this.registry];
    this.httpDuration = new Histogram({
      name: 'switchboard_http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern and status (event streams: until they close)',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.turns = new Counter({
      name: 'switchboard_turns_total',
      help: 'User messages answered, by the agent version, and the capability and status they left the conversation in',
      labelNames: t(['agent', 'version', 'capability', 'status']),
      registers,
    });
    this.routing = new Counter({
      name: 'switchboard_routing_decisions_total',
      help: "Routing decisions by agent version: matched (the router's choice), llm (the model's choice), fallback (the agent's fallback)",
      labelNames: t(['agent', 'version', 'decision']),
      registers,
    });
    this.confidence = new Histogram({
      name: 'switchboard_routing_confidence',
      help: "The selected capability's score in each routing decision",
      labelNames: t(['agent']),
      buckets: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1],
      registers,
    });
    this.actionCalls = new Counter({
      name: 'switchboard_action_calls_total',
      help: 'HTTP action calls by outcome (ok, http_error, timeout, network_error, blocked)',
      labelNames: t(['agent', 'action', 'outcome']),
      registers,
    });
    this.actionDuration = new Histogram({
      name: 'switchboard_action_duration_seconds',
      help: 'HTTP action calls, retries included',
      labelNames: t(['agent', 'action']),
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.llmTokens = new Counter({
      name: 'switchboard_llm_tokens_total',
      help: 'Model tokens of generative phases, by kind (input, output)',
      labelNames: t(['agent', 'kind']),
      registers,
    });
    this.masked = new Counter({
      name: 'switchboard_pii_masked_total',
      help: "Personal data an agent's privacy policy masked in what its turns kept, by type (email, phone, card, iban, ssn, national_id, ip)",
      labelNames: t(['agent', 'type']),
      registers,
    });
    this.llmCalls = new Counter({
      name: 'switchboard_llm_calls_total',
      help: 'Model calls of generative phases by outcome: ok, llm_error, or llm_budget_exceeded (refused before the call)',
      labelNames: t(['agent', 'outcome']),
      registers,
    });
    this.closed = new Counter({
      name: 'switchboard_conversations_closed_total',
      help: "Conversations leaving the agent's hands by agent version: completed, escalated or abandoned",
      labelNames: t(['agent', 'version', 'status']),
      registers,
    });
    this.started = new Counter({
      name: 'switchboard_conversations_started_total',
      help: 'Conversations started, by the agent version they run on (a split sends a share of them to its candidate)',
      labelNames: t(['agent', 'version']),
      registers,
    });
    // Channels are few and fixed, outcomes too: no label budget needed.
    this.channelMessages = new Counter({
      name: 'switchboard_channel_messages_total',
      help: 'Webhook messages of messaging channels: accepted, duplicate (a redelivery), refused (bad signature), ignored (not a message), paused, rate_limited, failed, retried, verification',
      labelNames: ['channel', 'outcome'],
      registers,
    });
    this.channelDeliveries = new Counter({
      name: 'switchboard_channel_deliveries_total',
      help: 'Replies through messaging channels: sent, retried (an attempt that will be tried again), failed, refused (the provider will not take it, such as WhatsApp outside 24 hours)',
      labelNames: ['channel', 'status'],
      registers,
    });
    this.outboxAttempts = new Counter({
      name: 'switchboard_outbox_attempts_total',
      help: 'Attempts of the outbox queues (webhooks, channel_deliveries) by outcome: delivered, retried, failed, refused, again (more to send at once), postponed (a paused channel)',
      labelNames: ['queue', 'outcome'],
      registers,
    });
    this.internalErrors = new Counter({
      name: 'switchboard_internal_errors_total',
      help: 'Failures caught where nobody waits for the result: an observer of a committed write (commit_hook), a promise nobody handled (unhandled_rejection)',
      labelNames: ['source'],
      registers,
    });
    // prom-client calls each gauge's collect() on a scrape.
    new Gauge({
      name: 'switchboard_db_pool_connections',
      help: 'Database pool connections by state',
      labelNames: ['state'],
      registers,
      collect() {
        const p = sources.pool();
        this.set({ state: 'used' }, p.used);
        this.set({ state: 'free' }, p.free);
        this.set({ state: 'pending_acquire' }, p.pendingAcquires);
        this.set({ state: 'pending_create' }, p.pendingCreates);
      },
    });
    const outbox = () => {
      if (!this.outbox || Date.now() - this.outbox.at > OUTBOX_TTL_MS) this.outbox = { at: Date.now(), value: sources.outboxPending() };
      return this.outbox.value;
    };
    new Gauge({
      name: 'switchboard_webhook_outbox_pending',
      help: 'Webhook deliveries waiting to be made or retried (in the shared database: the same on every replica)',
      registers,
      async collect() {
        this.set(await outbox().catch(() => Number.NaN));
      },
    });
    /** A counter read at scrape time from tallies the app keeps: one series for each key of `read()`, under the label `source`. */
    const tallied = (name: string, help: string, read: () => Readonly<Record<string, number>>) =>
      new Counter({
        name,
        help,
        labelNames: ['source'],
        registers,
        collect() {
          this.reset();
          for (const [source, n] of Object.entries(read())) this.inc({ source }, n);
        },
      });
    /** A counter read at scrape time from a total the app keeps. */
    const total = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    if (sources.routers) {
      const routers = () => sources.routers!();
      tallied(
        'switchboard_routers_total',
        'Routers this process obtained: trained here, loaded as stored by another process or an earlier run, loaded and trained again (older model), or loaded and stored again in the current layout (converted)',
        routers,
      );
    }
    if (sources.compiledBytes) {
      const compiledBytes = () => sources.compiledBytes!();
      new Gauge({
        name: 'switchboard_compiled_agents_bytes',
        help: 'Bytes of compiled agent versions (routers, knowledge indexes, definitions) held in memory; bounded by ROUTER_CACHE_MB',
        registers,
        collect() {
          this.set(compiledBytes());
        },
      });
    }
    if (sources.compiledCollections) {
      const collections = () => sources.compiledCollections!();
      total(
        'switchboard_compiled_agents_collections_total',
        'Major garbage collections the cache of compiled agent versions asked for, when buffers of evicted versions V8 had not yet freed went past its slack',
        collections,
      );
    }
    if (sources.keptRows) {
      const kept = () => sources.keptRows!();
      tallied(
        'switchboard_conversation_rows_total',
        "Continuing calls' conversation rows on PostgreSQL: kept by this process as it wrote them (no read), read from the database, or kept but found changed when written (the call ran again)",
        () => kept().tallies,
      );
      new Gauge({
        name: 'switchboard_conversation_rows_kept_bytes',
        help: 'Bytes of conversation rows this process keeps for the next call on each (about; bounded by CONVERSATION_CACHE_MB)',
        registers,
        collect() {
          this.set(kept().bytes);
        },
      });
    }
    if (sources.turnBatches) {
      const batches = () => sources.turnBatches!();
      total(
        'switchboard_turn_writes_batched_total',
        'Turn writes on PostgreSQL that went in one statement with others of the same turn of the event loop',
        () => batches().writes,
      );
      total('switchboard_turn_write_batches_total', 'Statements on PostgreSQL that carried several turn writes', () => batches().statements);
    }
    new Gauge({
      name: 'switchboard_event_streams_open',
      help: 'Open conversation event streams (SSE) in this process',
      registers,
      collect() {
        this.set(sources.openStreams());
      },
    });
    const spentToday = this.spentToday;
    new Gauge({
      name: 'switchboard_llm_tenant_tokens_today',
      help: 'Model tokens the tenant spent today (UTC), as last read from the database',
      labelNames: ['tenant'],
      registers,
      collect() {
        const today = new Date().toISOString().slice(0, 10);
        this.reset();
        for (const [tenant, [day, tokens]] of spentToday) {
          if (day === today) this.set({ tenant }, tokens);
          else spentToday.delete(tenant);
        }
      },
    });
    new Gauge({
      name: 'switchboard_llm_tenant_daily_tokens_limit',
      help: 'LLM_TENANT_DAILY_TOKENS (0: no cap)',
      registers,
    }).set(opts.tenantDailyTokens);
  }

  private labels(tenant: string, rest: Record<string, string>): Record<string, string> {
    return this.withTenant ? { tenant, ...rest } : rest;
  }

  /** The text a scrape answers (the contract names its content type). */
  scrape(): Promise<string> {
    this.merged ??= Registry.merge([processMetrics(), this.registry]);
    return this.merged.metrics();
  }

  /** A tenant's model tokens of the day, as the database counted them after a call (tenants past the label cap are not shown). */
  tokensToday(tenant: string, day: string, tokens: number): void {
    if (this.names.tenant(tenant) === tenant) this.spentToday.set(tenant, [day, tokens]);
  }

  /** Counts a failure caught where nobody waits for the result (the process stays up). */
  channelInbound(channel: string, outcome: string, n = 1): void {
    this.channelMessages.inc({ channel, outcome }, n);
  }

  channelDelivery(channel: string, status: string): void {
    this.channelDeliveries.inc({ channel, status });
  }

  outboxAttempt(queue: string, outcome: string): void {
    this.outboxAttempts.inc({ queue, outcome });
  }

  internalError(source: 'commit_hook' | 'unhandled_rejection'): void {
    this.internalErrors.inc({ source });
  }

  /** Counts what a committed write did: its turn, routing decisions, action and model calls, closes. */
  observeWrite(w: TurnWrite, slug: string): void {
    const c = w.conversation;
    const tenant = this.names.tenant(c.tenantId);
    const agent = this.names.name(tenant, 'agent', slug);
    // Capabilities and actions are counted as pairs with their agent: the cap bounds series, not names.
    const named = (kind: string, name: string) => (agent === OTHER ? OTHER : this.names.name(tenant, kind, `${agent}\u0000${name}`) === OTHER ? OTHER : name);
    // Versions count against the agent's names too: a tenant storing versions in a loop makes no new series past the cap.
    const version = agent === OTHER ? OTHER : this.names.name(tenant, 'version', `${agent}\u0000${c.agentVersion}`) === OTHER ? OTHER : String(c.agentVersion);
    if (w.isNew) this.started.inc(this.labels(tenant, { agent, version }));
    // A routing decision went to the fallback when the write counted it there (agent-stats.ts).
    const fallbacks = new Set((w.stats ?? []).filter((s) => s.fallback > 0).map((s) => s.capability));
    // Only a converse call writes a user turn.
    if (w.turns.some((t) => t.role === 'user')) {
      this.turns.inc(this.labels(tenant, { agent, version, capability: named('capability', c.capability), status: c.status }));
    }
    for (const a of w.audit) {
      const d = a.data;
      switch (a.type) {
        case 'routing_decision': {
          const selected = d.selected as { capability: string; score: number } | undefined;
          const decision = selected && fallbacks.has(selected.capability) ? 'fallback' : d.strategy === 'llm' ? 'llm' : 'matched';
          this.routing.inc(this.labels(tenant, { agent, version, decision }));
          // prom-client throws on a value that is not a number.
          if (selected && Number.isFinite(selected.score)) this.confidence.observe(this.labels(tenant, { agent }), selected.score);
          break;
        }
        case 'action_call': {
          const action = named('action', String(d.action));
          this.actionCalls.inc(this.labels(tenant, { agent, action, outcome: String(d.outcome) }));
          if (a.durationMs !== null && Number.isFinite(a.durationMs)) this.actionDuration.observe(this.labels(tenant, { agent, action }), a.durationMs / 1000);
          break;
        }
        case 'llm_call':
          this.llmCalls.inc(this.labels(tenant, { agent, outcome: 'ok' }));
          this.llmTokens.inc(this.labels(tenant, { agent, kind: 'input' }), Number(d.input_tokens) || 0);
          this.llmTokens.inc(this.labels(tenant, { agent, kind: 'output' }), Number(d.output_tokens) || 0);
          break;
        case 'error':
          if (d.code === 'llm_error' || d.code === 'llm_budget_exceeded') {
            this.llmCalls.inc(this.labels(tenant, { agent, outcome: d.code }));
          }
          break;
        case 'status_change':
          if (CLOSING.has(String(d.to))) this.closed.inc(this.labels(tenant, { agent, version, status: String(d.to) }));
          break;
        case 'turn_timing':
          // What the privacy policy masked (types from the detectors' fixed list, counts).
          for (const [type, n] of Object.entries((d.masked ?? {}) as Record<string, number>)) this.masked.inc(this.labels(tenant, { agent, type }), n);
          break;
        default:
          break;
      }
    }
  }
}
