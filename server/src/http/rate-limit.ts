// Per-tenant rate limits: RATE_LIMIT_RPS requests a second plus RATE_LIMIT_BURST more over ten
// seconds (rate-limiter-flexible's BurstyRateLimiter), made by the service's Limits: with
// REDIS_URL the budget is shared by every server process; if Redis cannot be reached, each
// process falls back to its own memory.
import type { NextFunction, Request, Response } from 'express';
import { BurstyRateLimiter, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { RateLimitedError } from '../errors.js';
import { retryAfterOf, type Limits } from '../service/limits.js';

export function tenantRateLimit(config: Config['rateLimit'], limits: Limits) {
  if (config.rps <= 0) return null;
  const limiter = new BurstyRateLimiter(
    limits.limiter({ name: 'rate', points: Math.max(1, Math.round(config.rps)), seconds: 1 }),
    limits.limiter({ name: 'burst', points: Math.max(0, config.burst), seconds: 10 }),
  );
  return (req: Request, _res: Response, next: NextFunction): void => {
    const tenant = String(req.headers['tenant-id']);
    limiter.consume(tenant).then(
      () => next(),
      (rej: unknown) => next(rej instanceof RateLimiterRes ? new RateLimitedError(retryAfterOf(rej)) : rej),
    );
  };
}
