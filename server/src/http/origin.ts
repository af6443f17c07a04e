// Where a request comes from and went to: the client's address (behind TRUST_PROXY's proxies),
// and the origin it reached this server at, read from its Host header when that is a plain host
// name or address (and port): what documents and answers name when PUBLIC_URL is not set.
import type { NextFunction, Request, Response } from 'express';

const PLAIN_HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** The client's address: the peer's, or as the proxies TRUST_PROXY names say (Express's req.ip). */
export const clientAddress = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';

export function requestOrigin(req: Request): string | null {
  const host = req.get('host');
  return host && PLAIN_HOST.test(host) ? `${req.protocol}://${host}` : null;
}

/**
 * Without TRUST_PROXY, a request that came through a proxy (it carries X-Forwarded-For) counts
 * against the proxy's address: every client behind it shares one budget of every per-address
 * limit. Said once per process, at the first such request.
 */
export function untrustedForwarding(log: { warn(o: object, m: string): void }) {
  let said = false;
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!said && req.headers['x-forwarded-for'] !== undefined) {
      said = true;
      log.warn(
        { peer: req.socket.remoteAddress },
        'a request came through a proxy (X-Forwarded-For) but TRUST_PROXY is not set: every client behind it shares the per-address limits; set TRUST_PROXY (docs/deployment.md)',
      );
    }
    next();
  };
}
