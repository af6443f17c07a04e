// The cookies of people's sessions (docs/people.md): `sb_session` holds the session (HttpOnly,
// SameSite=Lax, Secure when the service is reached over https), `sb_login` the state of a
// sign-in under way (the same, for ten minutes, on the callback's path alone). Behind PUBLIC_URL
// with a path, both live under that path.
import type { Request, Response } from 'express';
import { parse, serialize } from 'cookie';

export const SESSION_COOKIE = 'sb_session';
export const LOGIN_COOKIE = 'sb_login';

/** A cookie of the request, the first of that name. */
export function cookieOf(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header || header.length > 8192) return undefined;
  return parse(header)[name];
}

export class SessionCookies {
  private readonly secure: boolean;
  private readonly base: string;

  /** `serviceUrl`: the service as browsers reach it (PUBLIC_URL, else HOST and PORT). */
  constructor(serviceUrl: string) {
    const url = new URL(serviceUrl);
    this.secure = url.protocol === 'https:';
    this.base = url.pathname.replace(/\/+$/, '');
  }

  /** A path of this service as browsers reach it (under PUBLIC_URL's path). */
  path(p: string): string {
    return `${this.base}${p}`;
  }

  private set(res: Response, name: string, value: string, path: string, maxAgeSeconds: number): void {
    const cookie = serialize(name, value, { httpOnly: true, sameSite: 'lax', secure: this.secure, path, maxAge: maxAgeSeconds });
    res.append('set-cookie', cookie);
  }

  session(res: Response, value: string, expiresAt: string): void {
    this.set(res, SESSION_COOKIE, value, this.path('/'), Math.max(1, Math.floor((Date.parse(expiresAt) - Date.now()) / 1000)));
  }

  clearSession(res: Response): void {
    this.set(res, SESSION_COOKIE, '', this.path('/'), 0);
  }

  login(res: Response, state: string): void {
    this.set(res, LOGIN_COOKIE, state, this.path('/auth/callback'), 600);
  }

  clearLogin(res: Response): void {
    this.set(res, LOGIN_COOKIE, '', this.path('/auth/callback'), 0);
  }
}
