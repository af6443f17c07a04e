import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // As the server starts (lib/collect.ts asks V8 for collections).
    execArgv: ['--expose-gc'],
    maxWorkers: 2,
    // Every response is checked against openapi.json; the counts are printed at the end.
    setupFiles: ['test/setup/openapi-check.ts'],
    globalSetup: ['test/helpers/openapi-coverage.ts'],
  },
});
