// The request id: the caller's `x-request-id` when it is a sane token, else a fresh UUID; echoed
// on every response and stored on audit entries.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

const SANE = /^[A-Za-z0-9._:/+=-]{1,200}$/;

export function requestId(opts: { header?: string } = {}) {
  const header = opts.header ?? 'x-request-id';
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.headers[header];
    const id = typeof given === 'string' && SANE.test(given) ? given : randomUUID();
    (req as Request & { id: string }).id = id;
    req.headers[header] = id;
    res.setHeader(header, id);
    next();
  };
}
