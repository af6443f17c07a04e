// The rate limits of the service's surfaces (the tenant rate of the API, the widget's keys,
// visitors and addresses, the channels' webhooks), made in one place so that they share one
// budget across replicas when REDIS_URL is set: every limiter is then a rate-limiter-flexible
// RateLimiterRedis on one connection, with a limiter in this process's memory as its insurance
// while Redis cannot be reached. Without REDIS_URL each process counts on its own (N replicas
// allow N times each limit; docs/security.md says which limits these are).
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { RateLimitedError } from '../errors.js';

export interface LimitSpec {
  /** The limiter's name in Redis (`sb:<name>:<key>`). */
  name: string;
  /** Points a window, and the window in seconds. */
  points: number;
  seconds: number;
}

export class Limits {
  private readonly redis: Redis | null;

  constructor(redisUrl: string | undefined) {
    this.redis = redisUrl ? new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false }) : null;
    this.redis?.on('error', () => undefined); // the insurance limiters cover an unreachable Redis
  }

  limiter(spec: LimitSpec): RateLimiterAbstract {
    const opts = { keyPrefix: `sb:${spec.name}`, points: spec.points, duration: spec.seconds };
    return this.redis ? new RateLimiterRedis({ storeClient: this.redis, ...opts, insuranceLimiter: new RateLimiterMemory(opts) }) : new RateLimiterMemory(opts);
  }

  /** Resolves when Redis is connected (at once without Redis, or after `timeoutMs` if it stays down). */
  async ready(timeoutMs = 3000): Promise<void> {
    const redis = this.redis;
    if (!redis || redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, timeoutMs);
      redis.once('ready', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  close(): Promise<void> {
    this.redis?.disconnect();
    return Promise.resolve();
  }
}

/** Seconds until a refused limiter has room again, at least 1 (for retry-after). */
export const retryAfterOf = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

/** Spends one of `key`'s budget, or throws 429 with `detail` and the wait in retry-after. */
export async function spend(limiter: RateLimiterAbstract, key: string, detail: string): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (e) {
    if (!(e instanceof RateLimiterRes)) throw e;
    throw new RateLimitedError(retryAfterOf(e), detail);
  }
}

/** Throws 429 when `key` has no budget left, without spending any (a budget only failures spend). */
export async function mustHaveRoom(limiter: RateLimiterAbstract, key: string, detail: string): Promise<void> {
  const res = await limiter.get(key);
  if (res && res.remainingPoints <= 0) throw new RateLimitedError(retryAfterOf(res), detail);
}

/** Spends one point of a failure budget; never throws (the request is refused for its own reason). */
export async function spendQuietly(limiter: RateLimiterAbstract, key: string): Promise<void> {
  await limiter.consume(key).catch(() => undefined);
}
