// Configuration: parsed once from the environment, validated, frozen, passed in.
import type { VectorsSetting } from './engine/word-vectors.js';
import { isIP } from 'node:net';
import { z } from 'zod';
import { ChannelKind } from '@switchboard/contract';

const Bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z
    .string()
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'an http or https URL')
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  DATABASE_URL: z.string().min(1).default('sqlite://./data/switchboard.db'),
  DATABASE_LISTEN_URL: z.string().min(1).optional(),
  DB_PREPARED_STATEMENTS: Bool.default('true'),
  CONVERSATION_CACHE_MB: z.coerce.number().int().min(0).max(4096).default(16),
  AUTH_MODE: z.enum(['header', 'api_key']).default('header'),
  TRUST_TENANT_HEADER: Bool.default('false'),
  TRUST_PROXY: z
    .string()
    .trim()
    .default('false')
    .transform((v, ctx) => {
      const trust = trustProxy(v);
      if (trust === null) {
        ctx.addIssue({
          code: 'custom',
          message:
            'false, a number of proxy hops (1: one load balancer), or a comma-separated list of addresses, subnets (10.0.0.0/8) and loopback, linklocal or uniquelocal',
        });
        return z.NEVER;
      }
      return trust;
    }),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  METRICS_TENANT_LABEL: Bool.default('true'),
  METRICS_PUBLIC: Bool.default('false'),
  METRICS_MAX_TENANTS: z.coerce.number().int().min(1).default(500),
  METRICS_MAX_NAMES: z.coerce.number().int().min(1).default(50),
  ACTION_ALLOWED_HOSTS: z.string().default(''),
  AUDIT_CHAIN_KEY: z
    .string()
    .regex(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/, 'must be 32 bytes as 64 hex digits or base64 (openssl rand -base64 32)')
    .optional(),
  AUDIT_CHAIN_PREVIOUS_KEYS: z
    .string()
    .regex(
      /^(([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)(,([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?))*)?$/,
      'must be keys of 32 bytes (64 hex digits or base64), comma-separated, oldest first',
    )
    .optional(),
  SECRETS_KEY: z
    .string()
    .regex(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/, 'must be 32 bytes as 64 hex digits or base64 (openssl rand -base64 32)')
    .optional(),
  RENDER_BUDGET_MS: z.coerce.number().int().min(1).max(10_000).default(250),
  RENDER_BUDGET_CHARS: z.coerce.number().int().min(1024).default(1_000_000),
  RENDER_TENANT_MS_PER_SECOND: z.coerce.number().min(1).max(1000).default(100),
  MAX_REPLY_BYTES: z.coerce
    .number()
    .int()
    .min(256)
    .default(64 * 1024),
  TRAIN_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  TRAIN_MEMORY_MB: z.coerce.number().int().min(64).default(1024),
  TRAIN_WORKERS: z.coerce.number().int().min(1).max(64).default(2),
  ROUTER_CACHE_MB: z.coerce.number().int().min(1).default(512),
  ROUTER_STORE_TENANT_MB: z.coerce.number().int().min(1).default(256),
  ROUTER_VECTORS: z.enum(['auto', 'off']).default('auto'),
  ROUTER_VECTORS_FILE: z.string().min(1).optional(),
  DB_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  CONVERSATION_LEASE_MS: z.coerce.number().int().min(1000).default(60_000),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(16),
  WEBHOOK_TENANT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(4),
  SSE_MAX_PER_TENANT: z.coerce.number().int().min(1).default(500),
  SSE_MAX_PER_CONVERSATION: z.coerce.number().int().min(1).default(10),
  MAX_MESSAGE_CHARS: z.coerce.number().int().min(1).max(1_000_000).default(4000),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024),
  AGENT_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024),
  ACTION_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  AGENTS_DIR: z.string().optional(),
  AGENTS_TENANT: z.string().default('demo'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  DB_ACQUIRE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5000),
  LLM_URL: z.string().url().optional(),
  LLM_MODEL: z.string().min(1).optional(),
  LLM_API_KEY: z.string().optional(),
  LLM_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(20_000),
  LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  LLM_MAX_TOKENS_PER_CONVERSATION: z.coerce.number().int().min(0).default(50_000),
  LLM_TENANT_DAILY_TOKENS: z.coerce.number().int().min(0).default(0),
  LLM_MODELS: z.string().default(''),
  LLM_MAX_INPUT_TOKENS: z.coerce.number().int().min(100).default(16_000),
  LLM_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(16),
  LLM_TENANT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(4),
  ROUTER_LLM_URL: z.string().url().optional(),
  ROUTER_LLM_MODEL: z.string().min(1).optional(),
  ROUTER_LLM_API_KEY: z.string().optional(),
  ROUTER_LLM_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3000),
  LLM_EMBEDDINGS_MODEL: z.string().min(1).max(200).optional(),
  ROUTER_EMBEDDINGS_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  RATE_LIMIT_RPS: z.coerce.number().min(0).default(100),
  RATE_LIMIT_BURST: z.coerce.number().int().min(0).default(200),
  REDIS_URL: z.string().optional(),
  MAX_TURNS_PER_CONVERSATION: z.coerce.number().int().min(2).default(1000),
  MAX_CONTEXT_BYTES: z.coerce
    .number()
    .int()
    .min(256)
    .default(16 * 1024),
  MAX_STATE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).default(30_000),
  WEBHOOK_INTERVAL_MS: z.coerce.number().int().min(0).default(2_000),
  CHANNEL_INTERVAL_MS: z.coerce.number().int().min(0).default(1_000),
  CHANNEL_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(16),
  CHANNEL_TENANT_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(4),
  CHANNEL_INBOUND_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  CHANNEL_API_URLS: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (!raw) return {};
      try {
        return z.record(ChannelKind, z.string().url()).parse(JSON.parse(raw));
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object of channel to base URL, such as {"slack":"http://127.0.0.1:9000/api"}' });
        return z.NEVER;
      }
    }),
  SSE_HEARTBEAT_MS: z.coerce.number().int().min(100).default(15_000),
  RETENTION_DAYS: z.coerce.number().min(0).default(0),
  HISTORY_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .refine(
      (d) => d === 0 || d >= 7,
      'must be 0 (keep all history) or at least 7 days: webhook deliveries are retried for hours, and a month is dropped whole',
    ),
  REVIEW_LOW_MARGIN: z.coerce.number().min(0).max(1).default(0.1),
  REVIEW_MAX_PER_CONVERSATION: z.coerce.number().int().min(0).default(5),
  REVIEW_MAX_PER_AGENT_HOUR: z.coerce.number().int().min(0).default(500),
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  MAX_CONNECTIONS: z.coerce.number().int().min(1).default(8192),
  MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).default(512),
  SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).default(0),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30_000),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().min(0).default(24),
  WIDGET_KEY_PER_MINUTE: z.coerce.number().int().min(1).default(3000),
  WIDGET_VISITOR_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  WIDGET_ADDRESS_PER_MINUTE: z.coerce.number().int().min(1).default(120),
  WIDGET_UNKNOWN_KEY_PER_MINUTE: z.coerce.number().int().min(1).default(20),
  WIDGET_NEW_VISITORS_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(1).default(20),
  WIDGET_KEY_NEW_VISITORS_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  WIDGET_VISITOR_TOKEN_HOURS: z.coerce.number().int().min(1).max(720).default(24),
  WIDGET_NEW_CONVERSATIONS_PER_HOUR: z.coerce.number().int().min(1).default(20),
  WIDGET_KEY_NEW_CONVERSATIONS_PER_HOUR: z.coerce.number().int().min(1).default(5000),
  WIDGET_STREAMS_PER_VISITOR: z.coerce.number().int().min(1).max(100).default(3),
  WIDGET_STREAMS_PER_KEY: z.coerce.number().int().min(1).default(200),
  WIDGET_MAX_MESSAGE_CHARS: z.coerce.number().int().min(1).max(1_000_000).default(2000),
  TENANT_RETENTION_DAYS: z
    .string()
    .regex(
      /^(\s*[A-Za-z0-9][A-Za-z0-9._-]{0,63}\s*=\s*\d+(\.\d+)?\s*)?(,\s*[A-Za-z0-9][A-Za-z0-9._-]{0,63}\s*=\s*\d+(\.\d+)?\s*)*$/,
      'must look like "acme=30,beta=7"',
    )
    .default(''),
});

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
function llmConfig(e: z.infer<typeof EnvSchema>): LlmConfig | undefined {
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

function vectorsSetting(e: z.infer<typeof EnvSchema>): VectorsSetting {
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
function fromEnv(e: z.infer<typeof EnvSchema>, env: NodeJS.ProcessEnv) {
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

/**
 * TRUST_PROXY as Express's `trust proxy` takes it: false, a number of hops, or a list of
 * addresses, subnets and the names Express knows; null when it is none of these. `true` (trust
 * any sender's X-Forwarded-For) is refused: any client could then choose its own address.
 */
function trustProxy(v: string): false | number | string[] | null {
  if (v === '' || /^(false|0|no)$/i.test(v)) return false;
  if (/^\d+$/.test(v)) return Number(v);
  const parts = v.split(',').map((p) => p.trim());
  const ok = (p: string) => {
    if (p === 'loopback' || p === 'linklocal' || p === 'uniquelocal') return true;
    const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(p);
    const family = m ? isIP(m[1]) : 0;
    return family > 0 && (m?.[2] === undefined || Number(m[2]) <= (family === 4 ? 32 : 128));
  };
  return parts.length && parts.every(ok) ? parts : null;
}

/** True for addresses only this machine can reach: the header auth mode is safe only there. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const h = host.replace(/^\[|\]$/g, '');
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1';
  return false;
}
