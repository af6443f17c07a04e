// The tenant's OpenID provider, through openid-client (a certified relying party): discovery,
// the authorization code flow with PKCE, state and nonce, and the ID token's checks (issuer,
// audience, expiry within a bounded clock tolerance, signature by the provider's JWKS, which the
// library fetches again when a token names a key it does not hold). Nothing here checks a token
// by hand.
import * as oidc from 'openid-client';
import { isLoopbackHost } from '../../config.js';

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string | undefined;
  scopes: string;
  /** Where the provider sends the browser back: PUBLIC_URL (or the server's address) + /auth/callback. */
  redirectUri: string;
  /** Seconds of clock difference tolerated in the ID token's times. */
  clockToleranceSeconds: number;
}

/** What the provider said of the person, its ID token checked. */
export interface SignedIn {
  claims: Record<string, unknown>;
  idToken: string | undefined;
}

/** The provider failed or refused (discovery, the token request, the ID token's checks). */
export class ProviderError extends Error {}

/** An error's message with those of its causes (openid-client wraps the check that failed). */
function reasons(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err; e instanceof Error && out.length < 3; e = e.cause) if (!out.includes(e.message)) out.push(e.message);
  return out.join(': ').slice(0, 500);
}

export class OidcClient {
  private config: Promise<oidc.Configuration> | undefined;

  constructor(private readonly s: OidcSettings) {}

  /** The provider's configuration, discovered once; a failed discovery is tried again by the next caller. */
  private configuration(): Promise<oidc.Configuration> {
    if (!this.config) {
      const issuer = new URL(this.s.issuer);
      // Plain http only for a provider on this machine (a development provider, the tests'): the
      // library marks the option deprecated to make its use stand out, which is what it is for.
      const insecure = issuer.protocol === 'http:' && isLoopbackHost(issuer.hostname);
      const auth = this.s.clientSecret ? oidc.ClientSecretBasic(this.s.clientSecret) : oidc.None();
      this.config = oidc
        .discovery(issuer, this.s.clientId, { [oidc.clockTolerance]: this.s.clockToleranceSeconds }, auth, {
          // eslint-disable-next-line @typescript-eslint/no-deprecated -- loopback providers only, above
          ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
          timeout: 10,
        })
        .catch((err: unknown) => {
          this.config = undefined;
          throw new ProviderError(`the OpenID provider ${this.s.issuer} could not be discovered: ${(err as Error).message}`);
        });
    }
    return this.config;
  }

  /** The provider's sign-in page for a new attempt, and what the callback must check. */
  async begin(): Promise<{ url: string; state: string; nonce: string; verifier: string }> {
    const config = await this.configuration();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.s.redirectUri,
      scope: this.s.scopes,
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state, nonce, verifier };
  }

  /** Redeems the callback's code and checks the ID token; throws ProviderError when anything fails. */
  async complete(callback: URL, expected: { state: string; nonce: string; verifier: string }): Promise<SignedIn> {
    const config = await this.configuration();
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: expected.verifier,
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new Error('the provider sent no ID token');
      return { claims, idToken: tokens.id_token };
    } catch (err) {
      throw new ProviderError(reasons(err));
    }
  }

  /** Where to send the browser to sign out at the provider too, when it supports it (RP-initiated logout). */
  async endSessionUrl(idToken: string | null, returnTo: string): Promise<string | null> {
    const config = await this.configuration().catch(() => null);
    if (!config?.serverMetadata().end_session_endpoint) return null;
    return oidc.buildEndSessionUrl(config, { ...(idToken ? { id_token_hint: idToken } : {}), post_logout_redirect_uri: returnTo }).href;
  }
}
