// The training pool's time budget, against a worker whose training blocks (deterministic: no
// machine needs to be slow enough): the training is refused with the budget's error, the worker
// is ended, and the next training gets a fresh one.
import { describe, expect, it } from 'vitest';
import { TrainingPool } from '../../server/src/service/agents/training.js';

const caps = (first: string) => [
  { name: first, examples: ['where is my order', 'track my package', 'has my order shipped'] },
  { name: 'billing', examples: ['I was charged twice', 'I want a refund', 'question about my invoice'] },
];

describe('the training pool', () => {
  it('stops a training past TRAIN_TIMEOUT_MS with a 422, and trains the next one in a fresh worker', async () => {
    const pool = new TrainingPool({
      timeoutMs: 2000,
      memoryMb: 256,
      workers: 1,
      workerUrl: new URL('../fixtures/blocking-training-worker.mjs', import.meta.url),
    });
    try {
      const refused = await pool.train('t', caps('block'), null, false).then(
        () => null,
        (e: unknown) => e as { status: number; code: string; message: string },
      );
      expect(refused).toMatchObject({ status: 422, code: 'training_budget_exceeded' });
      expect(refused!.message).toMatch(/longer than 2000 ms/);
      const next = await pool.train('t', caps('order_status'), null, false);
      expect(next.capabilities).toEqual(['order_status', 'billing']);
    } finally {
      await pool.close();
    }
  });
});
