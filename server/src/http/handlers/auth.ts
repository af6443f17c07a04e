// The sign-in resource's handlers (contract/src/resources/auth.ts): the authorization code flow
// with the tenant's OpenID provider, and sign-out. The session cookie is set and cleared here
// (session-cookie.ts); what a sign-in checks is PeopleService's.
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { UnauthorizedError } from '../../errors.js';
import { spend } from '../../service/limits.js';
import type { Services } from '../../services.js';
import { checkCsrf } from '../auth.js';
import { clientAddress } from '../origin.js';
import { cookieOf, LOGIN_COOKIE, SESSION_COOKIE, type SessionCookies } from '../session-cookie.js';

const s = initServer();

/** Sign-ins one address may start in ten minutes: each leaves a row until its callback or its sweep. */
const SIGN_INS_PER_ADDRESS = 60;

export const authHandlers = ({ people, limits }: Services, cookies: SessionCookies, serviceOrigin: string | null) => {
  const perAddress = limits.limiter({ name: 'sign-in', points: SIGN_INS_PER_ADDRESS, seconds: 600 });
  return s.router(RESOURCES.auth.routes, {
    getSignInOptions: async ({ req }) => {
      const cookie = people.signInEnabled ? cookieOf(req, SESSION_COOKIE) : undefined;
      return {
        status: 200,
        body: {
          provider: people.issuer ? { issuer: people.issuer, sign_in_url: cookies.path('/auth/login') } : null,
          signed_in: cookie !== undefined && (await people.authenticate(cookie)) !== null,
        },
      };
    },
    signIn: async ({ query, req, res }) => {
      if (people.signInEnabled) await spend(perAddress, clientAddress(req), 'Too many sign-ins from this address: try again in a few minutes');
      const { url, state } = await people.beginSignIn(query.return_to ?? cookies.path('/console/'));
      cookies.login(res, state);
      res.setHeader('location', url);
      res.setHeader('cache-control', 'no-store');
      return { status: 302, body: undefined };
    },
    signInCallback: async ({ req, res }) => {
      const callback = new URL(req.originalUrl, people.redirectUri);
      cookies.clearLogin(res);
      const done = await people.completeSignIn(callback, cookieOf(req, LOGIN_COOKIE));
      cookies.session(res, done.cookie, done.expiresAt);
      res.setHeader('location', done.returnTo);
      res.setHeader('cache-control', 'no-store');
      return { status: 302, body: undefined };
    },
    signOut: async ({ req, res }) => {
      const cookie = cookieOf(req, SESSION_COOKIE);
      const person = cookie && people.signInEnabled ? await people.authenticate(cookie) : null;
      if (!person) throw new UnauthorizedError('No session to end');
      checkCsrf(req, person, serviceOrigin);
      const out = await people.signOut(person, `${serviceOrigin ?? ''}${cookies.path('/console/')}`);
      cookies.clearSession(res);
      return { status: 200, body: out };
    },
  });
};
