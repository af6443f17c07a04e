// Sign-in: people sign in to the console with the tenant's OpenID provider (docs/people.md)
import { z } from 'zod';
import { Problem } from '../common.js';
import { SignedOut, SignInOptions } from '../people.js';
import { initContract } from '@ts-rest/core';
import { publicResource } from '../resource.js';

const c = initContract();

const authProblem = (description: string) => Problem.describe(description);
const authOptions = {
  pathPrefix: '/auth',
  commonResponses: {
    400: authProblem('Invalid input (`validation_error`)'),
    404: authProblem('Sign-in with an OpenID provider is not configured on this server (`not_found`)'),
    429: authProblem('Too many sign-ins from this address (`rate_limited`); see retry-after'),
    500: authProblem('Unexpected failure (`internal_error`)'),
    503: authProblem('The provider cannot be reached (`unavailable`); see retry-after'),
  },
  strictStatusCodes: true,
} as const;

/** Where the browser goes after signing in: a path of this server, never another site. */
const ReturnTo = z
  .string()
  .max(1000)
  // A path, never `//host` or `/\host` (which browsers read as another site); no backslash at all.
  .regex(/^[/](?![/])[A-Za-z0-9._~!$&'()*+,;=:@%/?#-]*$/, 'must be a path of this server, such as /console/')
  .optional()
  .describe('Where to go after signing in (a path of this server; default the console)');

export const auth = publicResource({
  tag: 'Sign-in',
  description: "People sign in to the console with the tenant's OpenID provider (docs/people.md)",
  routes: c.router(
    {
      getSignInOptions: {
        method: 'GET',
        path: '/options',
        responses: { 200: SignInOptions },
        summary: 'How people sign in to this server: with an OpenID provider, or with a key or tenant id alone',
      },
      signIn: {
        method: 'GET',
        path: '/login',
        query: z.object({ return_to: ReturnTo }),
        responses: { 302: c.noBody() },
        summary: "Start signing in: redirects to the provider's sign-in page",
        description:
          'Authorization code flow with PKCE, state and nonce; the state is also set in a short-lived HttpOnly cookie, so that only the browser that started a sign-in can finish it.',
      },
      signInCallback: {
        method: 'GET',
        path: '/callback',
        query: z.object({
          code: z.string().max(4096).optional(),
          state: z.string().max(512).optional(),
          error: z.string().max(200).optional(),
          error_description: z.string().max(1000).optional(),
          iss: z.string().max(512).optional(),
          session_state: z.string().max(512).optional(),
        }),
        responses: {
          302: c.noBody(),
          401: Problem.describe('The provider refused, or its answer failed a check: state, code, ID token (`unauthorized`)'),
          403: Problem.describe('The person holds no role in the tenant, or is disabled (`forbidden`)'),
        },
        summary: 'Where the provider sends the browser back: sets the session cookie and redirects to where sign-in started',
      },
      signOut: {
        method: 'POST',
        path: '/logout',
        headers: z.object({ 'x-csrf-token': z.string().max(128).optional().describe("The session's CSRF token (GET /api/v1/me)") }),
        body: c.noBody(),
        responses: {
          200: SignedOut,
          403: Problem.describe('A session cookie without its CSRF token, or from another origin (`forbidden`)'),
        },
        summary: 'End this session, and say where to sign out at the provider too',
      },
    },
    authOptions,
  ),
  examples: {
    SignInWithProvider: {
      summary: 'People sign in with the company provider',
      value: { provider: { issuer: 'https://login.example.com/realms/acme', sign_in_url: '/auth/login' }, signed_in: false },
    },
    SignedOut: {
      summary: 'The provider supports RP-initiated logout',
      value: { end_session_url: 'https://login.example.com/realms/acme/protocol/openid-connect/logout?client_id=switchboard' },
    },
  },
  operations: {
    getSignInOptions: { response: ['SignInWithProvider'] },
    signIn: { response: [] },
    signInCallback: { response: [] },
    signOut: { response: ['SignedOut'] },
  },
});
