// Errors that cross into the HTTP layer keep what they came from, for the operator's log.
import { describe, expect, it } from 'vitest';
import { AppError, UnavailableError } from '../../server/src/errors.js';
import { Router, TrainingTooLargeError } from '../../server/src/engine/router/index.js';
import { RouterService } from '../../server/src/service/agents/routers.js';
import { systemClock } from '../../server/src/lib/clock.js';
import { translateDbError } from '../../server/src/store/db-errors.js';

describe('errors keep their cause', () => {
  it("a driver's connection failure is a 503 that keeps the driver's error", () => {
    const driver = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const mapped = translateDbError(driver);
    expect(mapped).toBeInstanceOf(UnavailableError);
    expect((mapped as UnavailableError).status).toBe(503);
    expect((mapped as Error).cause).toBe(driver);
    const other = new Error('syntax error');
    expect(translateDbError(other)).toBe(other);
  });

  it("the engine's refusal to train is the training pool's 422, with the engine's error as its cause", async () => {
    const routers = new RouterService(systemClock);
    const big = Array.from({ length: 40 }, (_, i) => ({
      name: `c${i}`,
      examples: Array.from({ length: 30 }, (_, k) => `example ${i} ${k} of a long enough text ${i * k}`),
    }));
    const spy = Router.train;
    Router.train = (caps, opts) => spy.call(Router, caps, { ...opts, maxBytes: 1024 });
    try {
      const err = await routers
        .routerFor('t', 'd')(big, null, false)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('training_budget_exceeded');
      expect((err as Error).cause).toBeInstanceOf(TrainingTooLargeError);
    } finally {
      Router.train = spy;
    }
  });
});
