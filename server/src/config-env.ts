// Every environment variable the server reads, with its type and default (config.ts maps them
// into the configuration once). The README's table documents each.
import { isIP } from 'node:net';
import { z } from 'zod';
import { ChannelKind } from '@switchboard/contract';

const Bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

export const EnvSchema = z.object({
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
  OIDC_ISSUER: z
    .string()
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'an http or https URL')
    .optional(),
  OIDC_CLIENT_ID: z.string().min(1).max(255).optional(),
  OIDC_CLIENT_SECRET: z.string().min(1).max(1024).optional(),
  OIDC_SCOPES: z
    .string()
    .regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'space-separated scopes')
    .default('openid email profile'),
  OIDC_TENANT: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a tenant id')
    .optional(),
  OIDC_TENANT_CLAIM: z.string().min(1).max(100).optional(),
  OIDC_GROUPS_CLAIM: z.string().min(1).max(100).default('groups'),
  OIDC_GROUP_ROLES: z.string().max(10_000).default(''),
  OIDC_CLOCK_TOLERANCE_SECONDS: z.coerce.number().int().min(0).max(300).default(30),
  SESSION_IDLE_MINUTES: z.coerce.number().int().min(1).max(10_080).default(120),
  SESSION_MAX_HOURS: z.coerce.number().int().min(1).max(720).default(12),
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
  KNOWLEDGE_MAX_FILE_MB: z.coerce.number().int().min(1).max(1024).default(50),
  KNOWLEDGE_MAX_SOURCES: z.coerce.number().int().min(1).default(500),
  KNOWLEDGE_MAX_BYTES_MB: z.coerce.number().int().min(1).default(2048),
  KNOWLEDGE_MAX_PASSAGES: z.coerce.number().int().min(1).default(100_000),
  KNOWLEDGE_MAX_PAGES: z.coerce.number().int().min(1).default(2000),
  KNOWLEDGE_READ_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  KNOWLEDGE_READ_MEMORY_MB: z.coerce.number().int().min(64).default(512),
  KNOWLEDGE_READ_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  KNOWLEDGE_INDEX_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  KNOWLEDGE_INDEX_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  KNOWLEDGE_CACHE_MB: z.coerce.number().int().min(1).default(256),
  KNOWLEDGE_MAX_SITE_PAGES: z.coerce.number().int().min(1).max(10_000).default(1000),
  KNOWLEDGE_MAX_SYNCS_PER_DAY: z.coerce.number().int().min(1).default(100),
  KNOWLEDGE_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  KNOWLEDGE_SYNC_WORKERS: z.coerce.number().int().min(1).max(64).default(2),
  KNOWLEDGE_SYNC_POLL_MS: z.coerce.number().int().min(100).default(30_000),
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
  AGENTS_FORCE_REASON: z.string().trim().min(1).max(500).optional(),
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

export type Env = z.infer<typeof EnvSchema>;
