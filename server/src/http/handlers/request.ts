// What several resources' handlers read from a request: its id, who acts, a widget caller.
import type { Request, Response } from 'express';
import { sameText } from '../../lib/same-text.js';
import { clientAddress } from '../origin.js';
import type { WidgetRequest } from '../../service/widget.js';

export const requestId = (res: { getHeader(n: string): unknown }) => String(res.getHeader('x-request-id'));

/** Who makes a release: the person, key or gateway (auth.ts), and the request. */
export const actor = (res: Response) => ({ by: res.locals.actor ?? null, requestId: requestId(res) });

/** Whether a request's authorization header carries the metrics token (compared in constant time). */
export function carriesToken(header: string | undefined, token: string): boolean {
  return sameText(header ?? '', `Bearer ${token}`);
}

/** What a widget request says of its key, page and visitor (the visitor headers are checked by the contract). */
export function widgetRequest(
  req: Request,
  res: Response,
  slug: string,
  key: string,
  h: { 'x-visitor-token'?: string; 'x-user-id'?: string; 'x-user-hash'?: string },
): WidgetRequest {
  return {
    key,
    slug,
    origin: req.headers.origin,
    visitorToken: h['x-visitor-token'],
    userIdClaim: h['x-user-id'],
    userHash: h['x-user-hash'],
    address: clientAddress(req),
    requestId: requestId(res),
    known: res.locals.widgetKey,
  };
}
