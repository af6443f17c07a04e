// Configuration: parsed once from the environment, validated, frozen, passed in.
import type { VectorsSetting } from './engine/word-vectors.js';
import { isIP } from 'node:net';
import { EnvSchema, type Env } from './config-env.js';
import { grantFrom, type Grant } from '@switchboard/contract';

export interface OperatorSecret {
  value: string;
  /** Tenants it is granted to; `*` only when the operator wrote it. */
  tenants: readonly string[];
}

export class ConfigError extends Error {}

const TENANT_OR_ALL = /^(\*|[A-Za-z0-9][A-Za-z0-9._-]{0,63})$/;

/** `TENANT=host[:port]` entries, comma-separated; `*=host` grants a host to every tenant. */
function parseHostGrants(raw: string): Record<string, string[]> {
  const grants: Record<string, string[]> = {};
  for (const entry of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf('=');
    const tenant = eq > 0 ? entry.slice(0, eq).trim() : '';
    const host =
      eq > 0
        ? entry
            .slice(eq + 1)
            .trim()
            .toLowerCase()
        : '';
    if (!TENANT_OR_ALL.test(tenant) || !host) {
      throw new ConfigError(
        `invalid configuration:\n  ACTION_ALLOWED_HOSTS: "${entry}" names no tenant; write TENANT=${eq > 0 ? host || 'HOST' : entry} (or *=${eq > 0 ? host || 'HOST' : entry} to grant it to every tenant)`,
      );
    }
    (grants[tenant] ??= []).push(host);
  }
  return grants;
}

const SECRET_PREFIX = 'SWITCHBOARD_SECRET_';
const GRANT_SUFFIX = '_TENANTS';

/** Operator secrets with their grants; a grant list names tenants, or `*`. */
function parseSecrets(env: NodeJS.ProcessEnv): Record<string, OperatorSecret> {
  const secrets: Record<string, OperatorSecret> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!k.startsWith(SECRET_PREFIX) || k.endsWith(GRANT_SUFFIX) || v === undefined || k.length === SECRET_PREFIX.length) continue;
    const name = k.slice(SECRET_PREFIX.length);
    const grant = env[`${k}${GRANT_SUFFIX}`] ?? '';
    const tenants = grant
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    const bad = tenants.find((t) => !TENANT_OR_ALL.test(t));
    if (bad) throw new ConfigError(`invalid configuration:\n  ${k}${GRANT_SUFFIX}: "${bad}" is not a tenant id (or *)`);
    secrets[name] = { value: v, tenants };
  }
  return secrets;
}

/** Every variable the server reads by name (SWITCHBOARD_VAR_* besides: agents' variables). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

function parseKey(raw: string | undefined, name = 'SECRETS_KEY'): Buffer | undefined {
  if (!raw) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, raw.includes('-') || raw.includes('_') ? 'base64url' : 'base64');
  if (key.length !== 32) throw new ConfigError(`invalid configuration:\n  ${name}: must be 32 bytes`);
  return key;
}

export interface LlmConfig {
  url: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
  /** Retries on 429, 5xx and lost connections, within the time-out. */
  maxRetries: number;
  /** Input and output tokens one conversation may spend (0: no cap). */
  maxTokensPerConversation: number;
  /** Tokens one tenant may spend per UTC day across processes (0: no cap). */
  tenantDailyTokens: number;
  /** Models definitions may name besides `model` (LLM_MODELS; none when absent). */
  models?: string[];
  /** The most one call may send, in estimated tokens (16,000 when absent). */
  maxInputTokens?: number;
  /** Model calls under way at once in one process, in all and per tenant (16 and 4 when absent). */
  concurrency?: { total: number; perTenant: number };
  /** Routing with the server's embeddings (LLM_EMBEDDINGS_MODEL): their model, and the most a routed message waits for one. */
  embeddings?: { model: string; timeoutMs: number };
}

/** LLM_* settings; ROUTER_LLM_* (the routing fallback's older names) stand in for those not set. */
function llmConfig(e: Env): LlmConfig | undefined {
  const url = e.LLM_URL ?? e.ROUTER_LLM_URL;
  if (!url) return undefined;
  return {
    url,
    model: e.LLM_MODEL ?? e.ROUTER_LLM_MODEL ?? 'gpt-4o-mini',
    apiKey: e.LLM_API_KEY ?? e.ROUTER_LLM_API_KEY,
    timeoutMs: e.LLM_TIMEOUT_MS,
    maxRetries: e.LLM_MAX_RETRIES,
    maxTokensPerConversation: e.LLM_MAX_TOKENS_PER_CONVERSATION,
    tenantDailyTokens: e.LLM_TENANT_DAILY_TOKENS,
    models: e.LLM_MODELS.split(',')
      .map((m) => m.trim())
      .filter(Boolean),
    maxInputTokens: e.LLM_MAX_INPUT_TOKENS,
    concurrency: { total: e.LLM_CONCURRENCY, perTenant: e.LLM_TENANT_CONCURRENCY },
    ...(e.LLM_EMBEDDINGS_MODEL ? { embeddings: { model: e.LLM_EMBEDDINGS_MODEL, timeoutMs: e.ROUTER_EMBEDDINGS_TIMEOUT_MS } } : {}),
  };
}

/**
 * OIDC_GROUP_ROLES: `group=role` or `group=role:agent,agent` entries, separated by `;` (a group may
 * come more than once). Group names are the provider's, compared exactly.
 */
function groupRoles(text: string): Readonly<Record<string, Grant[]>> {
  const out: Record<string, Grant[]> = {};
  for (const entry of text
    .split(';')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const eq = entry.lastIndexOf('=');
    const group = entry.slice(0, eq).trim();
    const grant = grantFrom(entry.slice(eq + 1));
    if (eq <= 0 || !group || !grant)
      throw new ConfigError(
        `invalid configuration:\n  OIDC_GROUP_ROLES: "${entry}" is not group=role or group=role:agent,agent (roles: owner, builder, releaser, reviewer, operator, viewer, client)`,
      );
    (out[group] ??= []).push(grant);
  }
  return out;
}

/** Sign-in with an OpenID provider (docs/people.md), or null when OIDC_ISSUER is not set. */
function oidcSetting(e: Env) {
  if (!e.OIDC_ISSUER) return null;
  const problems = [
    !e.OIDC_CLIENT_ID && 'OIDC_CLIENT_ID: required with OIDC_ISSUER',
    !e.OIDC_TENANT === !e.OIDC_TENANT_CLAIM &&
      'OIDC_TENANT or OIDC_TENANT_CLAIM: give one (the tenant every person of this provider belongs to, or the ID token claim naming it)',
    e.AUTH_MODE !== 'api_key' &&
      'AUTH_MODE: must be api_key with OIDC_ISSUER (with AUTH_MODE=header the gateway in front authenticates, and a session would add nothing)',
    !e.OIDC_SCOPES.split(' ').includes('openid') && 'OIDC_SCOPES: must include openid',
  ].filter((x): x is string => typeof x === 'string');
  if (problems.length) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return {
    issuer: e.OIDC_ISSUER,
    clientId: e.OIDC_CLIENT_ID!,
    clientSecret: e.OIDC_CLIENT_SECRET,
    scopes: e.OIDC_SCOPES,
    tenant: e.OIDC_TENANT ?? null,
    tenantClaim: e.OIDC_TENANT_CLAIM ?? null,
    groupsClaim: e.OIDC_GROUPS_CLAIM,
    groupRoles: groupRoles(e.OIDC_GROUP_ROLES),
    clockToleranceSeconds: e.OIDC_CLOCK_TOLERANCE_SECONDS,
  };
}

function vectorsSetting(e: Env): VectorsSetting {
  return e.ROUTER_VECTORS === 'off' ? { mode: 'off' } : { mode: 'auto', ...(e.ROUTER_VECTORS_FILE ? { file: e.ROUTER_VECTORS_FILE } : {}) };
}

/** Freezes an object and every object it holds; buffers (which cannot be frozen) are left as they are. */
function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/**
 * The configuration a server runs with, from the checked environment. Its type is `Config`: the
 * variables are named once in `EnvSchema` and mapped once here.
 */
function fromEnv(e: Env, env: NodeJS.ProcessEnv) {
  return {
    port: e.PORT,
    host: e.HOST,
    /** The URL clients reach this server at (behind a proxy); else /openapi.json names the request's own origin. */
    publicUrl: e.PUBLIC_URL,
    databaseUrl: e.DATABASE_URL,
    /** PostgreSQL: the server to LISTEN on directly, when DATABASE_URL names a pooler in transaction mode (docs/scaling.md). */
    databaseListenUrl: e.DATABASE_LISTEN_URL,
    /** PostgreSQL: the converse path's statements prepared once per connection (off behind PgBouncer before 1.21 in transaction mode). */
    dbPreparedStatements: e.DB_PREPARED_STATEMENTS,
    /** PostgreSQL: memory for the conversation rows this process wrote last, which spare the next call on each its read (0: none). */
    conversationCacheMb: e.CONVERSATION_CACHE_MB,
    authMode: e.AUTH_MODE,
    /** People sign in to the console with this OpenID provider (docs/people.md); null: they do not. */
    oidc: oidcSetting(e),
    /** A person's session ends after this long unused, and this long after sign-in at the latest. */
    sessions: { idleMs: e.SESSION_IDLE_MINUTES * 60_000, maxMs: e.SESSION_MAX_HOURS * 3_600_000 },
    trustTenantHeader: e.TRUST_TENANT_HEADER,
    /** The proxies whose X-Forwarded-For names the client (Express's `trust proxy`): hops, or addresses and subnets; false: none. */
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    /** json: one JSON object per line; pretty: pino-pretty's human-readable lines. */
    logFormat: e.LOG_FORMAT,
    /** GET /metrics: open when null, else `authorization: Bearer <token>`. */
    metricsToken: e.METRICS_TOKEN ?? null,
    /** Whether metrics carry the tenant label. */
    metricsTenantLabel: e.METRICS_TENANT_LABEL,
    /**
     * Label values a process gives names to: tenants, and per tenant each of agent, capability and
     * action names; the rest are counted under `other` (tenants choose these names).
     */
    metricsLabels: { maxTenants: e.METRICS_MAX_TENANTS, maxNamesPerTenant: e.METRICS_MAX_NAMES },
    /** Per tenant (`*`: every tenant), `host` or `host:port` entries HTTP actions and webhooks may reach although they are loopback or private. */
    actionAllowedHosts: parseHostGrants(e.ACTION_ALLOWED_HOSTS),
    maxMessageChars: e.MAX_MESSAGE_CHARS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    agentBodyLimitBytes: e.AGENT_BODY_LIMIT_BYTES,
    actionMaxResponseBytes: e.ACTION_MAX_RESPONSE_BYTES,
    /**
     * Operator secrets, `SWITCHBOARD_SECRET_<NAME>` → `secrets.NAME` in action templates, each
     * granted to the tenants listed in `SWITCHBOARD_SECRET_<NAME>_TENANTS` (`*`: every tenant).
     */
    secrets: parseSecrets(env) as Readonly<Record<string, OperatorSecret>>,
    /** Key that encrypts tenants' own secrets at rest (AES-256-GCM); without it the secrets API is off. */
    secretsKey: parseKey(e.SECRETS_KEY),
    /** Key of the audit chain's HMAC (AUDIT_CHAIN_KEY); without it entries are chained with SHA-256 alone. */
    auditChainKey: parseKey(e.AUDIT_CHAIN_KEY, 'AUDIT_CHAIN_KEY'),
    /** Keys the audit chain was keyed with before AUDIT_CHAIN_KEY (AUDIT_CHAIN_PREVIOUS_KEYS, oldest first): they only verify. */
    auditChainPreviousKeys: (e.AUDIT_CHAIN_PREVIOUS_KEYS ?? '')
      .split(',')
      .filter(Boolean)
      .map((k) => parseKey(k, 'AUDIT_CHAIN_PREVIOUS_KEYS')!),
    /** What all template rendering of one turn may spend: time spent rendering (never waiting) and characters produced. */
    renderBudget: { timeMs: e.RENDER_BUDGET_MS, outputChars: e.RENDER_BUDGET_CHARS },
    /** Template time one tenant may spend per second in one process (bursts up to four turns' budget). */
    tenantRenderMsPerSecond: e.RENDER_TENANT_MS_PER_SECOND,
    /** The most one turn may say (UTF-8 bytes); a longer reply is cut there and audited. */
    maxReplyBytes: e.MAX_REPLY_BYTES,
    /** Router training runs in worker threads, within this time and heap, one at a time per tenant. */
    training: { timeoutMs: e.TRAIN_TIMEOUT_MS, memoryMb: e.TRAIN_MEMORY_MB, workers: e.TRAIN_WORKERS },
    /** Knowledge sources (docs/knowledge.md): a file's size, the tenant's quotas, how files are read, and the search indexes kept. */
    knowledge: {
      maxFileBytes: e.KNOWLEDGE_MAX_FILE_MB * 1024 * 1024,
      maxSources: e.KNOWLEDGE_MAX_SOURCES,
      maxBytes: e.KNOWLEDGE_MAX_BYTES_MB * 1024 * 1024,
      maxPassages: e.KNOWLEDGE_MAX_PASSAGES,
      cacheBytes: e.KNOWLEDGE_CACHE_MB * 1024 * 1024,
      read: {
        workers: e.KNOWLEDGE_READ_WORKERS,
        timeoutMs: e.KNOWLEDGE_READ_TIMEOUT_MS,
        memoryMb: e.KNOWLEDGE_READ_MEMORY_MB,
        limits: { maxPages: e.KNOWLEDGE_MAX_PAGES, maxChars: 20_000_000, maxInflatedBytes: 512 * 1024 * 1024, maxDepth: 400 },
      },
      /** Search indexes are built in worker threads of their own, within this time and the reading heap. */
      index: {
        workers: e.KNOWLEDGE_INDEX_WORKERS,
        timeoutMs: e.KNOWLEDGE_INDEX_TIMEOUT_MS,
        memoryMb: e.KNOWLEDGE_READ_MEMORY_MB,
      },
      /** Web sources: pages a site keeps, syncs a tenant starts a day, one request's time, syncs at once, how often servers look for due ones. */
      sites: {
        maxSitePages: e.KNOWLEDGE_MAX_SITE_PAGES,
        maxSyncsPerDay: e.KNOWLEDGE_MAX_SYNCS_PER_DAY,
        fetchTimeoutMs: e.KNOWLEDGE_FETCH_TIMEOUT_MS,
        workers: e.KNOWLEDGE_SYNC_WORKERS,
        pollMs: e.KNOWLEDGE_SYNC_POLL_MS,
      },
    },
    /** Compiled agent versions (trained routers included) kept in memory, in MiB. */
    routerCacheMb: e.ROUTER_CACHE_MB,
    /** Stored routers one tenant keeps in the database, in MiB; the oldest are deleted first. */
    routerStoreTenantMb: e.ROUTER_STORE_TENANT_MB,
    /** Word vectors for routing (docs/routing.md, "Word vectors"): `auto` uses them when installed. */
    routerVectors: vectorsSetting(e),
    /** A database query that has not answered by then fails (and its connection is dropped): 503. */
    dbQueryTimeoutMs: e.DB_QUERY_TIMEOUT_MS,
    /** How long a server holds a conversation it is answering before another may take it over (renewed while it works). */
    conversationLeaseMs: e.CONVERSATION_LEASE_MS,
    /** Webhook deliveries under way at once, in all and per tenant. */
    webhookConcurrency: { total: e.WEBHOOK_CONCURRENCY, perTenant: e.WEBHOOK_TENANT_CONCURRENCY },
    /** Open event streams allowed per tenant and per conversation. */
    sseLimits: { perTenant: e.SSE_MAX_PER_TENANT, perConversation: e.SSE_MAX_PER_CONVERSATION },
    agentsDir: e.AGENTS_DIR,
    agentsTenant: e.AGENTS_TENANT,
    agentsForceReason: e.AGENTS_FORCE_REASON,
    dbPoolMax: e.DB_POOL_MAX,
    /** How long a request waits for a database connection before answering 503. */
    dbAcquireTimeoutMs: e.DB_ACQUIRE_TIMEOUT_MS,
    /** Per-tenant request rate (per second, 0: off) and extra burst; shared through Redis when REDIS_URL is set. */
    rateLimit: { rps: e.RATE_LIMIT_RPS, burst: e.RATE_LIMIT_BURST },
    /** Where the rate limits of every surface share their budgets across replicas (service/limits.ts); unset: each process counts its own. */
    redisUrl: e.REDIS_URL,
    maxTurnsPerConversation: e.MAX_TURNS_PER_CONVERSATION,
    maxContextBytes: e.MAX_CONTEXT_BYTES,
    /** Slots and action results a conversation may hold, as JSON. */
    maxStateBytes: e.MAX_STATE_BYTES,
    /** A routing whose two best capabilities are closer than this goes to the review inbox (low_margin). */
    reviewLowMargin: e.REVIEW_LOW_MARGIN,
    /** Review-inbox findings one conversation adds at most, and one agent in an hour (shared through Redis); the rest are counted, not kept. */
    reviewCaps: { perConversation: e.REVIEW_MAX_PER_CONVERSATION, perAgentHour: e.REVIEW_MAX_PER_AGENT_HOUR },
    /** How often the sweeper abandons inactive conversations and applies retention (0: never). */
    sweepIntervalMs: e.SWEEP_INTERVAL_MS,
    /** How often due webhook deliveries are attempted (0: never). */
    webhookIntervalMs: e.WEBHOOK_INTERVAL_MS,
    /**
     * Messaging channels (docs/channels.md): how often queued messages and replies are worked,
     * how many at once (in all and per tenant), inbound messages one channel may send a minute,
     * and where each provider's API is (the operator's choice: tests, egress proxies; never a tenant's).
     */
    channels: {
      intervalMs: e.CHANNEL_INTERVAL_MS,
      concurrency: { total: e.CHANNEL_CONCURRENCY, perTenant: e.CHANNEL_TENANT_CONCURRENCY },
      inboundPerMinute: e.CHANNEL_INBOUND_PER_MINUTE,
      apiUrls: e.CHANNEL_API_URLS,
    },
    sseHeartbeatMs: e.SSE_HEARTBEAT_MS,
    /** Days after which closed conversations are erased (0: never), with per-tenant overrides. */
    retention: {
      days: e.RETENTION_DAYS,
      historyDays: e.HISTORY_RETENTION_DAYS,
      idempotencyHours: e.IDEMPOTENCY_TTL_HOURS,
      tenants: Object.fromEntries(
        e.TENANT_RETENTION_DAYS.split(',')
          .map((p) => p.trim())
          .filter(Boolean)
          .map((p) => {
            const [t, d] = p.split('=').map((x) => x.trim());
            return [t, Number(d)];
          }),
      ),
    },
    /**
     * On SIGTERM: how long to keep accepting while /readyz answers 503 (for a load balancer to
     * notice), and the most the whole drain may take before the process exits anyway.
     */
    shutdown: { delayMs: e.SHUTDOWN_DELAY_MS, timeoutMs: e.SHUTDOWN_TIMEOUT_MS },
    /**
     * What a client's connection may hold (http/server.ts): its headers, and its whole request,
     * within these times; connections open in the process, and from one address without TRUST_PROXY.
     */
    connections: {
      headersTimeoutMs: Math.min(e.HEADERS_TIMEOUT_MS, e.REQUEST_TIMEOUT_MS),
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      max: e.MAX_CONNECTIONS,
      perAddress: e.MAX_CONNECTIONS_PER_ADDRESS,
    },
    /** What one publishable key, visitor and client address may do (docs/widget.md, "Limits"). */
    widget: {
      keyPerMinute: e.WIDGET_KEY_PER_MINUTE,
      visitorPerMinute: e.WIDGET_VISITOR_PER_MINUTE,
      addressPerMinute: e.WIDGET_ADDRESS_PER_MINUTE,
      unknownKeyPerMinute: e.WIDGET_UNKNOWN_KEY_PER_MINUTE,
      newVisitorsPerAddressPerHour: e.WIDGET_NEW_VISITORS_PER_ADDRESS_PER_HOUR,
      keyNewVisitorsPerMinute: e.WIDGET_KEY_NEW_VISITORS_PER_MINUTE,
      visitorTokenHours: e.WIDGET_VISITOR_TOKEN_HOURS,
      newConversationsPerHour: e.WIDGET_NEW_CONVERSATIONS_PER_HOUR,
      keyNewConversationsPerHour: e.WIDGET_KEY_NEW_CONVERSATIONS_PER_HOUR,
      streamsPerVisitor: e.WIDGET_STREAMS_PER_VISITOR,
      streamsPerKey: e.WIDGET_STREAMS_PER_KEY,
      maxMessageChars: Math.min(e.WIDGET_MAX_MESSAGE_CHARS, e.MAX_MESSAGE_CHARS),
    },
    /** Optional OpenAI-compatible provider for messages the embedded router cannot place. */
    /** The OpenAI-compatible provider of generative phases and the routing fallback (LLM_*, or the older ROUTER_LLM_* names). */
    llm: llmConfig(e),
    /** How long the routing fallback waits for the provider (shorter than a generative call). */
    routerLlmTimeoutMs: e.ROUTER_LLM_TIMEOUT_MS,
  };
}

export type Config = Readonly<ReturnType<typeof fromEnv>>;

/**
 * Reads and checks the environment. `purpose: 'tool'` is for the command-line tools (keys, agents),
 * which share the server's settings but serve nothing, so the checks that guard what the server
 * exposes (an open /metrics) are the server's alone.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}, purpose: 'serve' | 'tool' = 'serve'): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  if (e.LLM_EMBEDDINGS_MODEL && !(e.LLM_URL ?? e.ROUTER_LLM_URL)) {
    throw new ConfigError('invalid configuration:\n  LLM_EMBEDDINGS_MODEL: names a model of the model server, so it needs LLM_URL');
  }
  if (purpose === 'serve' && e.AUTH_MODE === 'api_key' && !e.METRICS_TOKEN && !e.METRICS_PUBLIC) {
    throw new ConfigError(
      'invalid configuration:\n  METRICS_TOKEN: required with AUTH_MODE=api_key, or /metrics names every tenant, agent, capability and action to anyone who asks (openssl rand -hex 24); METRICS_PUBLIC=true serves it open on purpose',
    );
  }
  return deepFreeze({ ...fromEnv(e, env), ...overrides });
}

/** True for addresses only this machine can reach: the header auth mode is safe only there. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const h = host.replace(/^\[|\]$/g, '');
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1';
  return false;
}

/**
 * The service's address as a browser or a tool reaches it: PUBLIC_URL when set, else this
 * machine's HOST and PORT (an address that listens on every interface is reached on loopback).
 */
export function serviceUrl(config: Pick<Config, 'publicUrl' | 'host' | 'port'>, port = config.port): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** A database URL as printed: without its password. */
export const shownDatabaseUrl = (url: string): string => url.replace(/\/\/[^@/]*@/, '//***@');
