// Every /api/v1 call names its tenant: the `tenant-id` header, or (AUTH_MODE=api_key) the key,
// which names its tenant. Checked before the contract's own validation so it can say so plainly.
import type { NextFunction, Request, Response } from 'express';
import { TenantId } from '@switchboard/contract';
import { InputError, TenantRequiredError, UnauthorizedError } from '../errors.js';
import type { KeyPrincipal, KeyService } from '../service/keys.js';
import type { PeopleService } from '../service/people/people-service.js';
import { cookieOf, SESSION_COOKIE } from './session-cookie.js';

export const bearerOf = (req: Request) => /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];

export function requireTenant(opts: { authMode: 'header' | 'api_key'; keys: KeyService; people: PeopleService }) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const given = req.headers['tenant-id'];
      if (given === undefined || given === '') {
        if (opts.authMode !== 'api_key') throw new TenantRequiredError();
        // The key (or a person's session) names the tenant; a missing or wrong one would have named none.
        const bearer = bearerOf(req);
        const session = bearer ? undefined : cookieOf(req, SESSION_COOKIE);
        if (session !== undefined && opts.people.signInEnabled) {
          const person = await opts.people.authenticate(session);
          if (!person) throw new UnauthorizedError('The session has ended: sign in again');
          req.headers['tenant-id'] = person.tenantId;
          res.locals.person = person;
        } else {
          const principal: KeyPrincipal | null = bearer ? await opts.keys.authenticate(bearer) : null;
          if (!principal) throw new UnauthorizedError();
          req.headers['tenant-id'] = principal.tenantId;
          res.locals.principal = principal;
        }
      } else if (!TenantId.safeParse(given).success) {
        throw new InputError('The tenant-id header is not valid', [
          { path: 'header.tenant-id', message: 'must be 1-64 characters of letters, digits, ".", "_" or "-"' },
        ]);
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}
