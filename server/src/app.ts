// Builds the Express application from configuration and dependencies; never listens itself.
import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { createExpressEndpoints } from '@ts-rest/express';
import { pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import swaggerUi from 'swagger-ui-express';
import { contract, TenantId } from '@switchboard/contract';
import { HttpActionRunner } from './actions/http-action.js';
import { LlmRouter } from './actions/llm-router.js';
import type { Config } from './config.js';
import { errorHandler, sendProblem, validationProblems } from './http/problem.js';
import { getOpenApi } from './http/openapi.js';
import { apiKeyAuth, tenantFromKey } from './http/auth.js';
import { eventStreams, type EventStreams } from './http/events.js';
import { depthLimit, refuseContentEncoding, refuseNul, YAML_TYPES, yamlBody } from './http/input-guards.js';
import { SecretService } from './service/secrets.js';
import { TrainingPool } from './service/training.js';
import { SecretStore } from './store/secret-store.js';
import { tenantRateLimit } from './http/rate-limit.js';
import { KeyService } from './service/keys.js';
import { createRouter } from './http/routes.js';
import { LifecycleService } from './service/lifecycle.js';
import { WebhookDispatcher } from './service/webhooks.js';
import { systemClock, type Clock } from './lib/clock.js';
import { AgentService } from './service/agent-service.js';
import { ConversationService } from './service/conversation-service.js';
import { AgentStore } from './store/agent-store.js';
import { ConversationStore } from './store/conversation-store.js';
import type { Database } from './store/db.js';

export interface AppDeps {
  db: Database;
  clock?: Clock;
  logger?: Logger;
  /** First retry delay of HTTP actions (tests shorten it). */
  actionRetryBaseMs?: number;
}

export interface App {
  app: express.Express;
  agents: AgentService;
  conversations: ConversationService;
  lifecycle: LifecycleService;
  webhooks: WebhookDispatcher;
  keys: KeyService;
  secrets: SecretService;
  store: ConversationStore;
  streams: EventStreams;
  logger: Logger;
  /** Starts the sweeper, the webhook dispatcher and (on PostgreSQL) the event listener. */
  startBackground(): Promise<void>;
  /** Resolves when the connections the app opens by itself (Redis) are up. */
  ready(): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

const REQUEST_ID = /^[A-Za-z0-9._:\/+=-]{1,200}$/;

export function createApp(config: Config, deps: AppDeps): App {
  const clock = deps.clock ?? systemClock;
  const logger =
    deps.logger ??
    pino({
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '***' },
    });
  const agentStore = new AgentStore(deps.db);
  const store = new ConversationStore(deps.db, { leaseMs: config.conversationLeaseMs });
  const actions = new HttpActionRunner({
    allowedHosts: config.actionAllowedHosts,
    maxResponseBytes: config.actionMaxResponseBytes,
    retryBaseMs: deps.actionRetryBaseMs,
    log: logger,
  });
  const training = new TrainingPool(config.training);
  const agents = new AgentService(agentStore, clock, { trainer: training.train, cacheBytes: config.routerCacheMb * 1048576 });
  const secrets = new SecretService(new SecretStore(deps.db), config.secrets, config.secretsKey, clock, logger);
  const conversations = new ConversationService(agents, store, actions, clock, {
    maxMessageChars: config.maxMessageChars,
    maxTurns: config.maxTurnsPerConversation,
    maxContextBytes: config.maxContextBytes,
    maxStateBytes: config.maxStateBytes,
    secrets,
    renderBudget: config.renderBudget,
    tenantRenderMsPerSecond: config.tenantRenderMsPerSecond,
    maxReplyBytes: config.maxReplyBytes,
    llm: config.routerLlm ? new LlmRouter(config.routerLlm) : undefined,
  });

  const keys = new KeyService(deps.db, clock);
  const rateLimit = tenantRateLimit(config.rateLimit);
  const lifecycle = new LifecycleService(agents, store, clock, config.retention, (t, s, i) => conversations.detail(t, s, i), config.maxTurnsPerConversation);
  const webhooks = new WebhookDispatcher(
    deps.db,
    clock,
    { allowedHosts: config.actionAllowedHosts, secrets, concurrency: config.webhookConcurrency },
    logger,
  );
  const streams = eventStreams(store, {
    heartbeatMs: config.sseHeartbeatMs,
    perTenant: config.sseLimits.perTenant,
    perConversation: config.sseLimits.perConversation,
    revoked: config.authMode === 'api_key' ? (ids) => keys.revokedAmong(ids) : undefined,
    log: logger,
  });
  let sweeper: NodeJS.Timeout | null = null;
  let sweeping = false;

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  // Request id: the caller's when it is a sane token, else a fresh one; echoed on every response.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    (req as Request & { id: string }).id = id;
    req.headers['x-request-id'] = id;
    res.setHeader('x-request-id', id);
    next();
  });
  app.use(
    pinoHttp({
      logger,
      genReqId: (req) => (req as unknown as { id: string }).id,
      // The route pattern, never the URL: paths and queries carry user ids, which erasure must be able to remove.
      // Called when the request starts (no route yet) and when it is logged: only the latter names one.
      customProps: (_req, res) => {
        const route = (res as Response).locals?.route as string | undefined;
        return route ? { route } : {};
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, tenant: req.headers?.['tenant-id'] }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
    }),
  );

  // A body must be JSON (an agent definition may also be YAML); anything else is refused before it is read.
  const AGENT_PATH = /^\/api\/v1\/agents\/[^/]+\/?$/;
  app.use((req: Request, res: Response, next: NextFunction) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const yamlAllowed = req.method === 'PUT' && AGENT_PATH.test(req.path);
    if (hasBody && !req.is(['application/json', 'application/*+json']) && !(yamlAllowed && req.is(YAML_TYPES))) {
      return sendProblem(req, res, 415, 'unsupported_media_type', yamlAllowed ? 'The body must be application/json or application/yaml' : 'The body must be application/json');
    }
    next();
  });
  app.use(refuseContentEncoding);
  const json = (limit: number) => express.json({ limit, type: ['application/json', 'application/*+json'], verify: depthLimit() });
  app.put('/api/v1/agents/:slug', json(config.agentBodyLimitBytes), express.text({ limit: config.agentBodyLimitBytes, type: YAML_TYPES }), yamlBody);
  app.use(json(config.bodyLimitBytes));
  app.use(refuseNul);

  if (config.authMode === 'api_key') app.use('/api/v1', tenantFromKey(keys));
  // Every /api/v1 call names its tenant; this check runs before the contract's so it can say so plainly.
  app.use('/api/v1', (req: Request, res: Response, next: NextFunction) => {
    const tenant = req.headers['tenant-id'];
    if ((tenant === undefined || tenant === '') && config.authMode === 'api_key') {
      // A valid key would have named the tenant.
      res.setHeader('www-authenticate', 'Bearer');
      return sendProblem(req, res, 401, 'unauthorized', 'A valid API key is required: authorization: Bearer <key>');
    }
    if (tenant === undefined || tenant === '') {
      return sendProblem(req, res, 400, 'tenant_required', 'The tenant-id header is required', [
        { path: 'header.tenant-id', message: 'required' },
      ]);
    }
    if (!TenantId.safeParse(tenant).success) {
      return sendProblem(req, res, 400, 'validation_error', 'The tenant-id header is not valid', [
        { path: 'header.tenant-id', message: 'must be 1-64 characters of letters, digits, ".", "_" or "-"' },
      ]);
    }
    next();
  });

  createExpressEndpoints(contract, createRouter({ agents, conversations, lifecycle, store, streams, keys, secrets, db: deps.db }), app, {
    // Authentication first, so that callers without a valid key cannot spend a tenant's budget.
    globalMiddleware: [
      // The route pattern, for the request log.
      ((req: Request, res: Response, next: NextFunction) => {
        res.locals.route = (req as Request & { tsRestRoute?: { path: string } }).tsRestRoute?.path;
        next();
      }) as never,
      ...(config.authMode === 'api_key' ? [apiKeyAuth(keys) as never] : []),
      ...(rateLimit ? [((req: Request, res: Response, next: NextFunction) => (req.path.startsWith('/api/') ? rateLimit.middleware(req, res, next) : next())) as never] : []),
    ],
    responseValidation: false,
    jsonQuery: false,
    requestValidationErrorHandler: (err, req, res) =>
      sendProblem(req as unknown as Request, res, 400, "validation_error", "The request is not valid", validationProblems(err)),
  });

  const openapi = getOpenApi();
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  app.use('/docs', swaggerUi.serve, swaggerUi.setup(openapi, { customSiteTitle: 'Switchboard API' }));

  app.use((req: Request, res: Response) => sendProblem(req, res, 404, 'not_found', `No route ${req.method} ${req.path}`));
  app.use(errorHandler(logger));

  return {
    app,
    agents,
    conversations,
    lifecycle,
    webhooks,
    keys,
    secrets,
    store,
    streams,
    logger,
    ready: async () => {
      await rateLimit?.ready();
    },
    startBackground: async () => {
      await rateLimit?.ready();
      await store.listen(logger);
      webhooks.start(config.webhookIntervalMs);
      if (config.sweepIntervalMs > 0 && !sweeper) {
        sweeper = setInterval(() => {
          if (sweeping) return;
          sweeping = true;
          lifecycle
            .sweep()
            .then((r) => (r.abandoned || r.erased) && logger.info(r, 'sweep'))
            .catch((err) => logger.warn({ err }, 'sweep failed'))
            .finally(() => (sweeping = false));
        }, config.sweepIntervalMs);
        sweeper.unref();
      }
    },
    /** Waits (up to `graceMs`) for conversation calls under way to finish, then closes the action client. */
    close: async (graceMs = 10_000) => {
      if (sweeper) clearInterval(sweeper);
      streams.closeAll();
      const until = Date.now() + graceMs;
      while (store.busy > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      await actions.close();
      await webhooks.stop();
      await training.close();
      await rateLimit?.close();
      await store.stopListening();
    },
  };
}
