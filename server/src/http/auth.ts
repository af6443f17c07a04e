// API-key authentication and scopes (AUTH_MODE=api_key), run for every /api/v1 route before its
// input is validated. 401 never says whether a key exists; 403 for another tenant or a missing scope.
import type { NextFunction, Request, Response } from 'express';
import type { AppRoute } from '@ts-rest/core';
import { contract, routeScopes, type Scope } from '@switchboard/contract';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import type { KeyService } from '../service/keys.js';
import { bearerOf } from './tenant.js';

// By method and path: ts-rest hands middleware a copy of the route object, not the contract's own.
const key = (r: AppRoute) => `${r.method} ${r.path}`;
const scopeOf = new Map<string, Scope>(
  Object.entries(contract.api).map(([name, route]) => [key(route as AppRoute), routeScopes[name as keyof typeof routeScopes]]),
);

// Operations routes are open; the widget's routes take publishable keys only (widget.ts checks them).
const publicRoutes = new Set([...Object.values(contract.ops), ...Object.values(contract.widget)].map((r) => key(r as AppRoute)));

export function apiKeyAuth(keys: KeyService) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const route = (req as Request & { tsRestRoute?: AppRoute }).tsRestRoute;
      if (!route || publicRoutes.has(key(route))) {
        next();
        return;
      }
      // Fail closed: a route without a scope is reachable by nobody.
      const scope = scopeOf.get(key(route));
      if (!scope) throw new ForbiddenError('This route has no scope');
      const bearer = bearerOf(req);
      const principal = res.locals.principal ?? (bearer ? await keys.authenticate(bearer) : null);
      if (!principal) throw new UnauthorizedError();
      if (principal.tenantId !== req.headers['tenant-id']) throw new ForbiddenError('This key belongs to another tenant');
      // admin is the widest scope: it may also read and converse, as people expect of it.
      if (!principal.scopes.includes(scope) && !principal.scopes.includes('admin')) throw new ForbiddenError(`This key lacks the "${scope}" scope`);
      // Long-lived responses (event streams) end when this key is revoked.
      res.locals.keyId = principal.keyId;
      res.locals.scopes = principal.scopes;
      next();
    } catch (err) {
      next(err);
    }
  };
}
