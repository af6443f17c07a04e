// Wires the services and background jobs from configuration and dependencies: everything the
// HTTP layer and the command-line tools use, and nothing of HTTP itself.
import { useVectors } from './service/agents/vectors.js';
import type { Logger } from 'pino';
import { DispatcherPool, hostsFor, HttpActionRunner } from './actions/http-action.js';
import { HostChecker, type Lookup } from './actions/ssrf.js';
import { LlmRouter } from './actions/llm-router.js';
import { LlmProvider } from './actions/llm-provider.js';
import { ModelGate } from './service/model-gate.js';
import { ServerEmbeddings } from './service/agents/server-embeddings.js';
import { KnowledgeService } from './service/knowledge/knowledge-service.js';
import { UsageService } from './service/usage.js';
import { Extractor } from './service/knowledge/extractor.js';
import { KnowledgeSourceStore } from './store/knowledge/source-store.js';
import { KnowledgeSiteStore } from './store/knowledge/site-store.js';
import { KnowledgeSites } from './service/knowledge/sites.js';
import { RenderBudgets } from './service/render-budgets.js';
import { LlmUsageStore } from './store/llm-usage-store.js';
import { serviceUrl, type Config } from './config.js';
import { systemClock, type Clock } from './lib/clock.js';
import { createLogger } from './lib/logger.js';
import { AgentService } from './service/agents/agent-service.js';
import { AnalyticsService } from './service/analytics.js';
import { ConversationService } from './service/conversations/conversation-service.js';
import { ConversationReads } from './service/conversations/conversation-reads.js';
import { eventStreams, type EventStreams } from './service/conversations/event-streams.js';
import { KeyService } from './service/keys.js';
import { LifecycleService } from './service/conversations/lifecycle.js';
import { Metrics } from './service/metrics.js';
import { SecretService } from './service/secrets.js';
import { PrivacyService } from './service/privacy/privacy-service.js';
import { PeopleService } from './service/people/people-service.js';
import { PrivacyStore } from './store/privacy-store.js';
import { WidgetService } from './service/widget.js';
import { Limits } from './service/limits.js';
import { Sweeper } from './service/conversations/sweeper.js';
import { TrainingPool } from './service/agents/training.js';
import { WebhookLog } from './service/webhooks/webhook-log.js';
import { ReplayService } from './service/evaluations/replays.js';
import { WebhookDispatcher } from './service/webhooks/webhooks.js';
import { RouterStore } from './store/agents/router-store.js';
import { AgentStore } from './store/agents/agent-store.js';
import { AnalyticsStore } from './store/analytics-store.js';
import { ConversationStore } from './store/conversations/conversation-store.js';
import type { Database } from './store/db.js';
import { ReplayStore } from './store/review/replay-store.js';
import { ReviewStore } from './store/review/review-store.js';
import { ReviewHourlyCap } from './service/review/review-caps.js';
import { EvaluationStore } from './store/review/evaluation-store.js';
import { TestSuiteStore } from './store/review/test-suite-store.js';
import { ReviewService } from './service/review/review.js';
import { EvaluationService } from './service/evaluations/evaluations.js';
import { ReleaseService } from './service/releases/releases.js';
import { ReleaseStore } from './store/release-store.js';
import { SecretStore } from './store/secret-store.js';
import { WebhookStore } from './store/webhook-store.js';
import { ChannelStore } from './store/channel-store.js';
import { ChannelService } from './service/channels/service.js';

/** What the metrics read of Knex's connection pool (tarn). */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}

export interface ServiceDeps {
  db: Database;
  clock?: Clock;
  logger?: Logger;
  /** First retry delay of HTTP actions (tests shorten it). */
  actionRetryBaseMs?: number;
  /** Checks the hosts definitions name, for warnings (tests give one asking their own name server). */
  hostChecker?: HostChecker;
  /** How actions resolve names (tests give one whose name server never answers). */
  actionLookup?: Lookup;
  /** The training worker's script (tests give one whose trainings block). */
  trainingWorkerUrl?: URL;
}

export interface Services {
  agents: AgentService;
  analytics: AnalyticsService;
  conversations: ConversationService;
  conversationReads: ConversationReads;
  lifecycle: LifecycleService;
  webhooks: WebhookDispatcher;
  webhookLog: WebhookLog;
  keys: KeyService;
  /** People who sign in with the tenant's OpenID provider, and their sessions (docs/people.md). */
  people: PeopleService;
  metrics: Metrics;
  secrets: SecretService;
  /** The tenants' privacy policies, and what each agent masks under its tenant's. */
  privacy: PrivacyService;
  replays: ReplayService;
  review: ReviewService;
  evaluations: EvaluationService;
  releases: ReleaseService;
  streams: EventStreams;
  /** The rate limits of every surface, shared across replicas through Redis when REDIS_URL is set. */
  limits: Limits;
  /** The web chat widget's keys, visitors and limits. */
  widget: WidgetService;
  /** Messaging channels: their webhooks, queues and deliveries. */
  channels: ChannelService;
  training: TrainingPool;
  /** Knowledge sources: uploads, their reading, and the search answer phases make. */
  knowledge: KnowledgeService;
  /** Web knowledge sources: pages and sites, synced on a schedule. */
  sites: KnowledgeSites;
  usage: UsageService;
  store: ConversationStore;
  logger: Logger;
  /** Resolves when the database answers (readiness). */
  ping: () => Promise<void>;
  /** Set when the process starts draining: readiness answers 503 from then on. */
  drain: { draining: boolean };
  /** Starts the sweeper, the webhook dispatcher and (on PostgreSQL) the event listener. */
  startBackground(): Promise<void>;
  /** Waits (up to `graceMs`) for conversation calls under way, then stops the jobs and closes clients. */
  close(graceMs?: number): Promise<void>;
}

export function createServices(config: Config, deps: ServiceDeps): Services {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ level: config.logLevel, format: config.logFormat });
  const limits = new Limits(config.redisUrl);
  const store = new ConversationStore(deps.db, {
    leaseMs: config.conversationLeaseMs,
    chainKey: config.auditChainKey,
    previousKeys: config.auditChainPreviousKeys,
  });
  const actions = new HttpActionRunner({
    allowedHosts: config.actionAllowedHosts,
    maxResponseBytes: config.actionMaxResponseBytes,
    retryBaseMs: deps.actionRetryBaseMs,
    log: logger,
    lookup: deps.actionLookup,
  });
  // The app's word vectors (loaded once per process and setting): its training pool's workers
  // share them, and its agents route with them; another app in the process may have others.
  const vectors = useVectors(config.routerVectors);
  if (vectors.loadedNow) logger.info({ vectors: vectors.vectors?.id ?? null, reason: vectors.reason }, vectors.detail);
  const training = new TrainingPool({ ...config.training, workerUrl: deps.trainingWorkerUrl }, vectors.vectors);
  const models = config.llm ? [...new Set([config.llm.model, ...(config.llm.models ?? [])])] : undefined;
  const renderBudgets = new RenderBudgets(config.renderBudget, config.tenantRenderMsPerSecond);
  // The gate is made below (it reports to metrics, which read the agents): the embeddings reach it when they call.
  const late: { gate?: ModelGate } = {};
  const embeddings = config.llm?.embeddings
    ? new ServerEmbeddings(() => late.gate!, {
        model: config.llm.embeddings.model,
        timeoutMs: config.llm.embeddings.timeoutMs,
        maxInputTokens: config.llm.maxInputTokens ?? 16_000,
      })
    : undefined;
  const hosts = deps.hostChecker ?? new HostChecker();
  const agents = new AgentService(new AgentStore(deps.db, config.auditChainKey), clock, {
    trainer: training.train,
    routers: new RouterStore(deps.db, { tenantMaxBytes: config.routerStoreTenantMb * 1048576 }),
    log: logger,
    cacheBytes: config.routerCacheMb * 1048576,
    models,
    renderBudgets,
    hosts: { checker: hosts, grants: (tenantId) => hostsFor(config.actionAllowedHosts, tenantId) },
    words: vectors,
    hashKeyed: !!config.secretsKey,
    embeddings,
  });
  const secrets = new SecretService(new SecretStore(deps.db), config.secrets, config.secretsKey, clock, logger);
  const provider = config.llm ? new LlmProvider(config.llm) : undefined;
  const usage = new LlmUsageStore(deps.db);
  const keys = new KeyService(deps.db, clock);
  const streams = eventStreams(store.eventLog, {
    heartbeatMs: config.sseHeartbeatMs,
    perTenant: config.sseLimits.perTenant,
    perConversation: config.sseLimits.perConversation,
    // Streams opened with a key (API keys; the widget's publishable keys in every mode) end when it is revoked.
    revoked: (ids) => keys.revokedAmong(ids),
    log: logger,
  });
  const pool = (deps.db.knex.client as { pool?: TarnPool }).pool;
  const webhookStore = new WebhookStore(deps.db);
  const metrics = new Metrics(
    { tenantLabel: config.metricsTenantLabel, tenantDailyTokens: config.llm?.tenantDailyTokens ?? 0, labels: config.metricsLabels },
    {
      pool: () => ({
        used: pool?.numUsed() ?? 0,
        free: pool?.numFree() ?? 0,
        pendingAcquires: pool?.numPendingAcquires() ?? 0,
        pendingCreates: pool?.numPendingCreates() ?? 0,
      }),
      outboxPending: () => webhookStore.pending(),
      openStreams: () => streams.size,
      routers: () => agents.routerCounts,
      compiledBytes: () => agents.cachedBytes,
      compiledCollections: () => agents.collectionsAsked,
      ...(deps.db.writer.kept ? { keptRows: () => deps.db.writer.kept! } : {}),
      ...(deps.db.writer.batches ? { turnBatches: () => deps.db.writer.batches! } : {}),
    },
  );
  // Observing a committed write must never fail the call or the process (conversation-store.ts).
  store.onHookError = (err) => {
    metrics.internalError('commit_hook');
    logger.error({ err }, 'an observer of a committed write failed: the write is stored, its metrics are not counted');
  };
  store.onCommit(async (write) => {
    const { tenantId, agentId } = write.conversation;
    const slug = await agents.slugOf(tenantId, agentId).catch((err: unknown) => {
      logger.warn({ err }, 'metrics: could not name the agent of a write');
      return null;
    });
    metrics.observeWrite(write, slug ?? agentId);
  });
  const gate = (late.gate =
    provider && config.llm
      ? new ModelGate(provider, usage, clock, {
          models: config.llm.models ?? [],
          maxInputTokens: config.llm.maxInputTokens ?? 16_000,
          tenantDailyTokens: config.llm.tenantDailyTokens,
          concurrency: config.llm.concurrency ?? { total: 16, perTenant: 4 },
          onTokens: (tenant, day, total) => metrics.tokensToday(tenant, day, total),
        })
      : undefined);
  const conversationReads = new ConversationReads(agents, store);
  const reader = new Extractor(config.knowledge.read);
  const knowledge = new KnowledgeService(
    new KnowledgeSourceStore(deps.db),
    reader,
    new Extractor(config.knowledge.index),
    clock,
    logger,
    config.knowledge,
    vectors.vectors,
  );
  const sites = new KnowledgeSites(
    new KnowledgeSiteStore(deps.db),
    knowledge,
    reader,
    new DispatcherPool(config.actionAllowedHosts, { lookup: deps.actionLookup }),
    clock,
    logger,
    config.knowledge.sites,
  );
  const privacy = new PrivacyService(new PrivacyStore(deps.db), config.secretsKey, clock, { log: logger });
  const conversations = new ConversationService(agents, store, actions, clock, {
    maxMessageChars: config.maxMessageChars,
    maxTurns: config.maxTurnsPerConversation,
    maxContextBytes: config.maxContextBytes,
    maxStateBytes: config.maxStateBytes,
    secrets,
    privacy,
    renderBudgets,
    maxReplyBytes: config.maxReplyBytes,
    llm: provider ? new LlmRouter(provider, config.routerLlmTimeoutMs) : undefined,
    gate,
    llmTokensPerConversation: config.llm?.maxTokensPerConversation ?? 0,
    embeddings,
    knowledge,
    reviewLowMargin: config.reviewLowMargin,
    reviewCaps: config.reviewCaps,
    reviewHourly: new ReviewHourlyCap(limits, config.reviewCaps.perAgentHour),
  });
  const lifecycle = new LifecycleService({
    agents,
    store,
    clock,
    retention: config.retention,
    detail: (t, s, i) => conversationReads.detail(t, s, i),
    privacy,
    maxTurns: config.maxTurnsPerConversation,
  });
  const webhooks = new WebhookDispatcher(
    deps.db,
    clock,
    { allowedHosts: config.actionAllowedHosts, secrets, concurrency: config.webhookConcurrency },
    logger,
    (q, o) => metrics.outboxAttempt(q, o),
  );
  const people = new PeopleService(deps.db, clock, { oidc: config.oidc, sessions: config.sessions, serviceUrl: serviceUrl(config) });
  const sweeper = new Sweeper(lifecycle, logger, people);
  const widget = new WidgetService({ keys, agents, conversations, conversationReads, streams, secrets, limits, clock, logger }, config.widget);
  const replays = new ReplayService({ agents, store, replays: new ReplayStore(deps.db), conversations, privacy, clock, log: logger, renderBudgets });
  const inbox = new ReviewStore(deps.db);
  const suites = new TestSuiteStore(deps.db);
  const review = new ReviewService({ agents, store: inbox, suites, clock, log: logger });
  const evaluations = new EvaluationService({
    agents,
    store: new EvaluationStore(deps.db),
    inbox,
    suites,
    replays,
    clock,
    trainer: (t) => agents.routers.unstored(t),
    log: logger,
  });
  const channels = new ChannelService(
    { store: new ChannelStore(deps.db), agents, conversations, lifecycle, metrics, limits, clock, logger },
    { ...config.channels, key: config.secretsKey, publicUrl: config.publicUrl },
  );
  // A person's reply goes out through the conversation's channel; the reply itself is stored whatever happens here.
  lifecycle.onOperatorMessage = (c, turn) =>
    channels.operatorReply(c, turn).catch((err: unknown) => logger.error({ err, conversation: c.id }, 'a person’s reply could not be queued for its channel'));
  const releases = new ReleaseService({
    agents,
    evaluations,
    store: new ReleaseStore(deps.db, config.auditChainKey, config.auditChainPreviousKeys),
    clock,
    log: logger,
    chainKey: config.auditChainKey,
  });

  return {
    limits,
    widget,
    channels,
    agents,
    analytics: new AnalyticsService(agents, new AnalyticsStore(deps.db), clock),
    conversations,
    conversationReads,
    lifecycle,
    webhooks,
    webhookLog: new WebhookLog(deps.db, agents),
    keys,
    people,
    metrics,
    secrets,
    privacy,
    replays,
    review,
    evaluations,
    releases,
    streams,
    training,
    knowledge,
    sites,
    usage: new UsageService(knowledge, sites),
    store,
    logger,
    ping: () => store.ping(),
    drain: { draining: false },
    startBackground: async () => {
      await store.eventLog.listen(logger);
      webhooks.start(config.webhookIntervalMs);
      channels.start();
      sweeper.start(config.sweepIntervalMs);
      sites.start();
    },
    close: async (graceMs = 10_000) => {
      await sweeper.stop();
      await channels.stop();
      await evaluations.close();
      await replays.close();
      await sites.stop();
      await knowledge.close();
      streams.closeAll();
      const until = Date.now() + graceMs;
      while (store.busy > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      await actions.close();
      await webhooks.stop();
      await training.close();
      await store.eventLog.stopListening();
      await limits.close();
    },
  };
}
