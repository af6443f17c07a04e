// The origin a request reached this server at, read from its Host header when that is a plain
// host name or address (and port): what documents and answers name when PUBLIC_URL is not set.
import type { Request } from 'express';

const PLAIN_HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export function requestOrigin(req: Request): string | null {
  const host = req.get('host');
  return host && PLAIN_HOST.test(host) ? `${req.protocol}://${host}` : null;
}
