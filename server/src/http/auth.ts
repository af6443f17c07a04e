// Who the caller is and whether they may: the one check of every /api/v1 route's permission
// (contract/src/access.ts), run before its input is validated. AUTH_MODE=api_key: a bearer key,
// or a person's session cookie (docs/people.md), names its tenant and holds grants; 401 never says
// whether a key exists; 403 for another tenant or a missing permission, naming the roles that have
// it. A session's requests that change something carry its CSRF token and come from this service's
// own origin. AUTH_MODE=header trusts the gateway in front, which speaks for the tenant's owner. A
// route without a permission is reachable by nobody.
import type { NextFunction, Request, Response } from 'express';
import type { AppRoute } from '@ts-rest/core';
import {
  agentGrantRoutes,
  agentsAllowed,
  allows,
  contract,
  ROLE_PERMISSIONS,
  routePermissions,
  type Grant,
  type Permission,
  type Role,
} from '@switchboard/contract';
import { ForbiddenError, UnauthorizedError } from '../errors.js';
import { sameText } from '../lib/same-text.js';
import type { KeyService } from '../service/keys.js';
import type { PeopleService, PersonPrincipal } from '../service/people/people-service.js';
import { requestOrigin } from './origin.js';
import { cookieOf, SESSION_COOKIE } from './session-cookie.js';
import { bearerOf } from './tenant.js';

// By method and path: ts-rest hands middleware a copy of the route object, not the contract's own.
const key = (r: AppRoute) => `${r.method} ${r.path}`;
const routes = new Map<string, { name: string; permission: Permission | undefined }>(
  Object.entries(contract.api).map(([name, route]) => [key(route as AppRoute), { name, permission: routePermissions[name as keyof typeof routePermissions] }]),
);

// Operations routes are open; the widget's routes take publishable keys only (widget.ts checks them);
// sign-in's routes are where a session begins and ends (handlers/auth.ts checks them).
const publicRoutes = new Set(
  [...Object.values(contract.ops), ...Object.values(contract.widget), ...Object.values(contract.auth)].map((r) => key(r as AppRoute)),
);

/** The gateway of AUTH_MODE=header speaks for the tenant's owner. */
const GATEWAY: readonly Grant[] = [{ role: 'owner' }];

/** The roles that hold a permission, for the 403's words. */
const holders = (p: Permission) => (Object.keys(ROLE_PERMISSIONS) as Role[]).filter((r) => ROLE_PERMISSIONS[r].includes(p)).join(', ');

/** Whether the request's caller holds `permission` on `slug` (AUTH_MODE=header: always). */
export const may = (res: Response, permission: Permission, slug?: string): boolean => allows(res.locals.grants ?? [], permission, slug);

/** The agents a list route may show this caller: 'all', or those its per-agent grants name. */
export const agentsShown = (res: Response, permission: Permission = 'read'): 'all' | string[] => agentsAllowed(res.locals.grants ?? [], permission);

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A session's request that changes something: it carries the session's CSRF token, and a browser's
 * Origin (when it sends one) is this service's own.
 */
export function checkCsrf(req: Request, person: PersonPrincipal, serviceOrigin: string | null): void {
  if (SAFE.has(req.method)) return;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== (serviceOrigin ?? requestOrigin(req)))
    throw new ForbiddenError(`A session's request from another origin (${origin.slice(0, 100)}) is refused`);
  const presented = req.headers['x-csrf-token'];
  if (typeof presented !== 'string' || !sameText(presented, person.csrf))
    throw new ForbiddenError("A request that changes something needs the session's CSRF token in x-csrf-token (GET /api/v1/me)");
}

export function authorize(opts: { authMode: 'header' | 'api_key'; keys: KeyService; people: PeopleService; serviceOrigin: string | null }) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const route = (req as Request & { tsRestRoute?: AppRoute }).tsRestRoute;
      const k = route && key(route);
      if (!route || !k || publicRoutes.has(k)) {
        next();
        return;
      }
      const found = routes.get(k);
      if (!found?.permission) throw new ForbiddenError('This route has no permission');
      const { name, permission } = found;
      let grants = GATEWAY;
      res.locals.actor = { kind: 'gateway' };
      if (opts.authMode === 'api_key') {
        const bearer = bearerOf(req);
        const session = bearer || !opts.people.signInEnabled ? undefined : cookieOf(req, SESSION_COOKIE);
        if (session !== undefined) {
          const person = res.locals.person ?? (await opts.people.authenticate(session));
          if (!person) throw new UnauthorizedError('The session has ended: sign in again');
          if (person.tenantId !== req.headers['tenant-id']) throw new ForbiddenError('This session belongs to another tenant');
          checkCsrf(req, person, opts.serviceOrigin);
          res.locals.person = person;
          res.locals.actor = person.actor;
          grants = person.grants;
        } else {
          const principal = res.locals.principal ?? (bearer ? await opts.keys.authenticate(bearer) : null);
          if (!principal) throw new UnauthorizedError();
          if (principal.tenantId !== req.headers['tenant-id']) throw new ForbiddenError('This key belongs to another tenant');
          grants = principal.grants;
          // Long-lived responses (event streams) end when this key is revoked.
          res.locals.keyId = principal.keyId;
          res.locals.actor = { kind: 'key', id: principal.keyId };
        }
      }
      res.locals.grants = grants;
      const slug = route.path.includes(':slug') ? String(req.params.slug) : undefined;
      // A list of agents is filtered by its handler (agentsShown): any grant of the permission reaches it.
      const shown = agentGrantRoutes.has(name) ? agentsAllowed(grants, permission) : null;
      if (shown ? shown !== 'all' && !shown.length : !allows(grants, permission, slug)) {
        const where = slug ? `on agent "${slug}"` : 'for the whole tenant';
        throw new ForbiddenError(`This needs the "${permission}" permission ${where} (roles: ${holders(permission)})`);
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}
