// A real OpenID provider on loopback for the sign-in tests: oidc-provider (certified), with users
// and groups of its own, its own signing keys (rotated on demand), and a way to alter the ID token
// it sends (re-signed with its own key) to play a provider that sends a bad one. Who signs in is
// chosen by the test (the interaction signs in `nextUser`), and a small cookie jar plays a browser.
import { createServer, type Server } from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT, type JWK } from 'jose';
import type { Grant } from '@switchboard/contract';

export interface Account {
  email: string;
  name: string;
  groups?: string[];
  tenant?: string;
}

const newKey = (): JWK => ({
  ...(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }) as JWK),
  kid: randomUUID(),
  alg: 'ES256',
  use: 'sig',
});

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Record<string, Account>;
  /** The subject the next sign-in signs in as. */
  nextUser: string;
  /** Alters the next ID tokens' claims (re-signed with the provider's key); null: as the provider made them. */
  tamper: ((claims: Record<string, unknown>) => Record<string, unknown>) | null;
  /** Signs with a new key from now on, publishing it beside the old one. */
  rotateKey(): Promise<void>;
  signingKid(): string;
  close(): Promise<void>;
}

export async function startProvider(redirectUri: string, accounts: Record<string, Account>): Promise<TestProvider> {
  const clientId = 'switchboard';
  const clientSecret = 'a-client-secret-of-the-tests-provider';
  let keys = [newKey()];
  let server: Server;
  let provider: Provider;
  const state: TestProvider = {
    issuer: '',
    clientId,
    clientSecret,
    accounts,
    nextUser: Object.keys(accounts)[0],
    tamper: null,
    rotateKey: async () => {
      keys = [newKey(), ...keys];
      await listen(port);
    },
    signingKid: () => String(keys[0].kid),
    close: () => new Promise((r) => server.close(() => r())),
  };

  const make = (issuer: string) => {
    const p = new Provider(issuer, {
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: [redirectUri],
          post_logout_redirect_uris: [new URL('/console/', redirectUri).href],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          id_token_signed_response_alg: 'ES256',
        },
      ],
      jwks: { keys },
      findAccount: (_ctx: unknown, sub: string) => {
        const a = accounts[sub];
        return a ? { accountId: sub, claims: () => ({ sub, ...a }) } : undefined;
      },
      claims: { openid: ['sub'], email: ['email'], profile: ['name', 'groups', 'tenant'] },
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      // Every scope the client asks for is granted without a consent page.
      loadExistingGrant: async (ctx: { oidc: { client?: { clientId: string }; session?: { accountId?: string }; provider: Provider } }) => {
        const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
        grant.addOIDCScope('openid email profile');
        await grant.save();
        return grant;
      },
      cookies: { keys: ['cookie-key-of-the-tests-provider'] },
    });
    // Alters the ID token of a token response, signed again with the provider's own key.
    p.use(async (ctx, next) => {
      await next();
      const body = ctx.body as { id_token?: string } | undefined;
      if (ctx.path !== '/token' || !state.tamper || !body?.id_token) return;
      const header = decodeProtectedHeader(body.id_token);
      const claims = state.tamper(decodeJwt(body.id_token) as Record<string, unknown>);
      const key = await importJWK(
        keys.find((k) => k.kid === header.kid)!,
        'ES256',
      );
      ctx.body = { ...body, id_token: await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: header.kid!, typ: 'JWT' }).sign(key) };
    });
    return p;
  };

  let port = 0;
  const listen = async (at: number) => {
    if (server) await new Promise<void>((r) => server.close(() => r()));
    server = createServer((req, res) => {
      if (!req.url?.startsWith('/interaction/')) return provider.callback()(req, res);
      // The interaction: the test's chosen user signs in, at once.
      void (async () => {
        try {
          await provider.interactionFinished(req, res, { login: { accountId: state.nextUser } }, { mergeWithLastSubmission: false });
        } catch (err) {
          res.statusCode = 500;
          res.end(String(err));
        }
      })();
    });
    await new Promise<void>((r) => server.listen(at, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
    state.issuer = `http://127.0.0.1:${port}`;
    provider = make(state.issuer);
  };
  await listen(0);
  return state;
}

/** The server's sign-in settings (config.oidc) for this provider: every person in tenant `tenant`. */
export const oidcSettings = (provider: TestProvider, groupRoles: Record<string, Grant[]>, tenant = 'acme') => ({
  issuer: provider.issuer,
  clientId: provider.clientId,
  clientSecret: provider.clientSecret,
  scopes: 'openid email profile',
  tenant,
  tenantClaim: null,
  groupsClaim: 'groups',
  groupRoles,
  clockToleranceSeconds: 30,
});

/** A browser's cookies, by name, with their paths (every server here is 127.0.0.1, as a browser shares them across ports). */
export class Browser {
  readonly cookies = new Map<string, { value: string; path: string }>();

  private header(url: URL): string {
    return [...this.cookies]
      .filter(([, c]) => url.pathname.startsWith(c.path))
      .map(([n, c]) => `${n}=${c.value}`)
      .join('; ');
  }

  private keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((x) => x.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const path = attrs.find((a) => /^path=/i.test(a))?.slice(5) ?? '/';
      const gone = attrs.some((a) => /^max-age=0$/i.test(a) || /^expires=Thu, 01 Jan 1970/i.test(a));
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, { value: pair.slice(eq + 1), path });
    }
  }

  /** One request, its cookies kept; redirects are not followed. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const u = new URL(url);
    const headers = new Headers(init.headers);
    const cookie = this.header(u);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(u, { ...init, headers, redirect: 'manual' });
    this.keep(res);
    return res;
  }

  /**
   * Follows redirects from `url` until one leaves for `stopAt` (the app's callback), which is
   * returned unvisited; every response on the way is kept in `seen`.
   */
  async follow(url: string, stopAt: string): Promise<string> {
    let next = url;
    for (let i = 0; i < 20; i++) {
      if (next.startsWith(stopAt)) return next;
      const res = await this.fetch(next);
      const location = res.headers.get('location');
      if (!location) throw new Error(`no redirect from ${next}: ${res.status} ${await res.text()}`);
      next = new URL(location, next).href;
    }
    throw new Error('too many redirects');
  }
}
