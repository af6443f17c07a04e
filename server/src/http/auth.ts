// API-key authentication and scopes (AUTH_MODE=api_key), run for every /api/v1 route before its
// input is validated. 401 never says whether a key exists; 403 for another tenant or a missing scope.
import type { NextFunction, Request, Response } from 'express';
import type { AppRoute } from '@ts-rest/core';
import { contract, routeScopes, type Scope } from '@switchboard/contract';
import type { KeyService } from '../service/keys.js';
import { sendProblem } from './problem.js';

// By method and path: ts-rest hands middleware a copy of the route object, not the contract's own.
const key = (r: AppRoute) => `${r.method} ${r.path}`;
const scopeOf = new Map<string, Scope>(
  Object.entries(contract.api).map(([name, route]) => [key(route as AppRoute), routeScopes[name as keyof typeof routeScopes]]),
);

const publicRoutes = new Set(Object.values(contract.ops).map((r) => key(r as AppRoute)));

const bearerOf = (req: Request) => /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];

/**
 * In api_key mode the key names its tenant, so `tenant-id` may be left out: it is filled in from
 * a valid key before the tenant check (a header that names another tenant still answers 403).
 */
export function tenantFromKey(keys: KeyService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const given = req.headers['tenant-id'];
    const bearer = bearerOf(req);
    if ((given !== undefined && given !== '') || !bearer) return next();
    try {
      const principal = await keys.authenticate(bearer);
      if (principal) {
        req.headers['tenant-id'] = principal.tenantId;
        res.locals.principal = principal;
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}

export function apiKeyAuth(keys: KeyService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const route = (req as Request & { tsRestRoute?: AppRoute }).tsRestRoute;
    if (!route || publicRoutes.has(key(route))) return next();
    // Fail closed: a route without a scope is reachable by nobody.
    const scope = scopeOf.get(key(route));
    if (!scope) return sendProblem(req, res, 403, 'forbidden', 'This route has no scope');
    try {
      const bearer = bearerOf(req);
      const principal = (res.locals.principal as Awaited<ReturnType<KeyService['authenticate']>> | undefined) ?? (bearer ? await keys.authenticate(bearer) : null);
      if (!principal) {
        res.setHeader('www-authenticate', 'Bearer');
        return sendProblem(req, res, 401, 'unauthorized', 'A valid API key is required: authorization: Bearer <key>');
      }
      if (principal.tenantId !== req.headers['tenant-id']) {
        return sendProblem(req, res, 403, 'forbidden', 'This key belongs to another tenant');
      }
      if (!principal.scopes.includes(scope)) {
        return sendProblem(req, res, 403, 'forbidden', `This key lacks the "${scope}" scope`);
      }
      // Long-lived responses (event streams) end when this key is revoked.
      res.locals.keyId = principal.keyId;
      next();
    } catch (err) {
      next(err);
    }
  };
}
