// Per-tenant rate limits: RATE_LIMIT_RPS requests a second plus RATE_LIMIT_BURST more over ten
// seconds (rate-limiter-flexible's BurstyRateLimiter). With REDIS_URL the budget is shared by
// every server process; if Redis cannot be reached, each process falls back to its own memory.
import type { NextFunction, Request, Response } from 'express';
import { Redis } from 'ioredis';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { RateLimitedError } from '../errors.js';

export interface TenantRateLimit {
  middleware(req: Request, res: Response, next: NextFunction): void;
  /** Resolves when Redis is connected (at once without Redis, or after `timeoutMs` if it stays down). */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function tenantRateLimit(config: Config['rateLimit']): TenantRateLimit | null {
  if (config.rps <= 0) return null;
  const rate = { points: Math.max(1, Math.round(config.rps)), duration: 1 };
  const burst = { points: Math.max(0, config.burst), duration: 10 };
  let redis: Redis | null = null;
  let limiter: BurstyRateLimiter;
  if (config.redisUrl) {
    redis = new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
    redis.on('error', () => undefined); // the insurance limiter covers an unreachable Redis
    limiter = new BurstyRateLimiter(
      new RateLimiterRedis({ storeClient: redis, keyPrefix: 'sb:rate', ...rate, insuranceLimiter: new RateLimiterMemory(rate) }),
      new RateLimiterRedis({ storeClient: redis, keyPrefix: 'sb:burst', ...burst, insuranceLimiter: new RateLimiterMemory(burst) }),
    );
  } else {
    limiter = new BurstyRateLimiter(new RateLimiterMemory(rate), new RateLimiterMemory(burst));
  }
  return {
    middleware(req, _res, next) {
      const tenant = String(req.headers['tenant-id']);
      limiter.consume(tenant).then(
        () => next(),
        (rej: unknown) => next(rej instanceof RateLimiterRes ? new RateLimitedError(Math.max(1, Math.ceil(rej.msBeforeNext / 1000))) : rej),
      );
    },
    async ready(timeoutMs = 3000) {
      if (!redis || redis.status === 'ready') return;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, timeoutMs);
        redis.once('ready', () => {
          clearTimeout(t);
          resolve();
        });
      });
    },
    close() {
      redis?.disconnect();
      return Promise.resolve();
    },
  };
}
