// The Express application over the services: middleware in order, the contract's routes, the
// OpenAPI document and its viewer, the web console, and the one error handler. It never listens itself.
import './locals.js';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { isAppRoute, type AppRoute, type AppRouter } from '@ts-rest/core';
import { createExpressEndpoints } from '@ts-rest/express';
import swaggerUi from 'swagger-ui-express';
import { contract } from '@switchboard/contract';
import { serviceUrl, type Config } from '../config.js';
import { DefinitionError, MethodNotAllowedError, NotFoundError } from '../errors.js';
import type { Services } from '../services.js';
import { authorize } from './auth.js';
import { consoleRouter } from './console.js';
import { depthLimit, refuseContentEncoding, refuseHostileInput, yamlBody } from './input-guards.js';
import { isAgentPut, JSON_TYPES, mediaType, YAML_TYPES } from './media-type.js';
import { getOpenApi } from './openapi.js';
import { errorHandler, validationProblems } from './problem.js';
import { tenantRateLimit } from './rate-limit.js';
import { recordRoute, requestLog, requestMetrics } from './request-log.js';
import { requestId } from './request-id.js';
import { createRouter } from './routes.js';
import { widgetCors, widgetScriptRouter } from './widget.js';
import { hooksRouter } from './hooks.js';
import { requestOrigin, untrustedForwarding } from './origin.js';
import { requireTenant } from './tenant.js';
import { SessionCookies } from './session-cookie.js';

export function createHttpApp(services: Services, config: Config): Express {
  const rateLimit = tenantRateLimit(config.rateLimit, services.limits);
  // People's sessions (docs/people.md): cookies under PUBLIC_URL's path; a session's writes come from its origin.
  const cookies = new SessionCookies(serviceUrl(config));
  const serviceOrigin = config.publicUrl ? new URL(config.publicUrl).origin : null;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // The client's address (req.ip) as the trusted proxies name it; without TRUST_PROXY, the peer's.
  app.set('trust proxy', config.trustProxy);

  app.use(requestId());
  if (config.trustProxy === false) app.use(untrustedForwarding(services.logger));
  // While draining, every answer asks its client to reconnect, so keep-alive connections move to
  // another replica instead of sending more requests to this one.
  app.use((_req, res, next) => {
    if (services.drain.draining) res.setHeader('connection', 'close');
    next();
  });
  // The widget's preflights are answered before anything reads a body (widget.ts).
  app.use('/widget/v1', widgetCors(services.widget));
  app.use(requestMetrics(services.metrics));
  app.use(requestLog({ logger: services.logger }));
  // Channel webhooks read their raw bodies before any other parser (hooks.ts).
  app.use('/hooks/v1', hooksRouter(services.channels, config.publicUrl));
  app.use(mediaType);
  app.use(refuseContentEncoding);
  const json = (limit: number) => express.json({ limit, type: JSON_TYPES, verify: depthLimit() });
  app.put('/api/v1/agents/:slug', json(config.agentBodyLimitBytes), express.text({ limit: config.agentBodyLimitBytes, type: YAML_TYPES }), yamlBody);
  app.use(json(config.bodyLimitBytes));
  app.use(refuseHostileInput);
  app.use('/api/v1', requireTenant({ authMode: config.authMode, keys: services.keys, people: services.people }));

  createExpressEndpoints(contract, createRouter(services, { metricsToken: config.metricsToken, cookies, serviceOrigin }), app, {
    // Authentication first, so that callers without a valid key cannot spend a tenant's budget.
    globalMiddleware: [
      recordRoute as never,
      authorize({ authMode: config.authMode, keys: services.keys, people: services.people, serviceOrigin }) as never,
      ...(rateLimit
        ? [((req: Request, res: Response, next: NextFunction) => (req.path.startsWith('/api/') ? rateLimit(req, res, next) : next())) as never]
        : []),
    ],
    responseValidation: false,
    jsonQuery: false,
    // A definition's schema problems come with those of the rest of it (references, templates),
    // so that one answer names everything to fix.
    requestValidationErrorHandler: (err, req, _res, next) => {
      if (!err.body || !isAgentPut(req as unknown as Request)) next(err);
      else next(new DefinitionError([...validationProblems(err, { body: false }), ...services.agents.problemsOf(req.body)]));
    },
  });

  const openapi = getOpenApi();
  // The document as served names the server it came from (PUBLIC_URL, else the request's origin),
  // so that the docs page's try-it-out reaches this server whatever its port, host or proxy; the
  // committed openapi.json keeps the local default.
  const served = (req: Request) => {
    const origin = config.publicUrl ?? requestOrigin(req);
    return origin ? { ...openapi, servers: [{ url: origin, description: 'This server' }] } : openapi;
  };
  // A document that names the request's host differs by host: no cache may hand one host's to another.
  const reflecting = (res: Response) => {
    if (config.publicUrl) return;
    res.setHeader('vary', 'Host');
    res.setHeader('cache-control', 'no-store');
  };
  app.get('/openapi.json', (req, res) => {
    reflecting(res);
    res.json(served(req));
  });
  const docsOptions = { customSiteTitle: 'Switchboard API' };
  // Swagger UI's page loads its own scripts only (no inline script); it styles with inline style
  // attributes, shows data: images, and calls this server (or PUBLIC_URL) when trying a request.
  const docsCsp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src 'self'${config.publicUrl ? ` ${new URL(config.publicUrl).origin}` : ''}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  app.use(
    '/docs',
    (req: Request & { swaggerDoc?: unknown }, res: Response, next: NextFunction) => {
      reflecting(res);
      res.setHeader('content-security-policy', docsCsp);
      res.setHeader('x-frame-options', 'DENY');
      res.setHeader('x-content-type-options', 'nosniff');
      req.swaggerDoc = served(req);
      next();
    },
    swaggerUi.serveFiles(openapi, docsOptions),
    swaggerUi.setup(openapi, docsOptions),
  );
  app.use('/console', consoleRouter());
  app.use('/widget', widgetScriptRouter());

  // A path of the contract asked with another method is 405 with the methods it takes; any other is 404.
  const routes = contractRoutes(contract).map((r) => ({
    method: r.method,
    pattern: new RegExp(`^${r.path.replace(/[.]/g, '\\.').replace(/:[A-Za-z_]+/g, '[^/]+')}/?$`),
  }));
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const methods = new Set<string>(routes.filter((r) => r.pattern.test(req.path)).map((r) => r.method));
    if (methods.has('GET')) methods.add('HEAD');
    if (methods.size) {
      next(new MethodNotAllowedError(req.method, req.path, [...methods].sort()));
      return;
    }
    next(new NotFoundError('not_found', `No route ${req.method} ${req.path}`));
  });
  app.use(errorHandler(services.logger));
  return app;
}

/** Every route of a ts-rest contract, nested routers walked. */
function contractRoutes(router: AppRouter): AppRoute[] {
  return Object.values(router).flatMap((r) => (isAppRoute(r) ? [r] : contractRoutes(r)));
}
