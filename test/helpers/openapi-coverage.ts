// Global setup of the test run: collects how many responses each operation of openapi.json had
// checked (setup/openapi-check.ts) and prints it at the end, with the operations no test reached.
// REQUIRE_OPENAPI_COVERAGE=1 (CI) fails the run when one was not reached.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPERATIONS } from './openapi-responses.js';

export function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-openapi-counts-'));
  process.env.OPENAPI_COUNTS_DIR = dir;
  return () => {
    const counts = new Map<string, number>(OPERATIONS.map((o) => [o.key, 0]));
    for (const file of readdirSync(dir)) {
      for (const line of readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean)) {
        for (const [op, n] of Object.entries(JSON.parse(line) as Record<string, number>)) counts.set(op, (counts.get(op) ?? 0) + n);
      }
    }
    rmSync(dir, { recursive: true, force: true });
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    if (!total) return; // a run of files that call no documented operation
    const missing = [...counts].filter(([, n]) => n === 0).map(([op]) => op);
    console.log(`\nopenapi.json: ${total} responses checked against the document, ${counts.size - missing.length} of ${counts.size} operations covered`);
    for (const [op, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(6)}  ${op}`);
    if (missing.length && process.env.REQUIRE_OPENAPI_COVERAGE === '1') {
      // An error thrown from a teardown is printed but leaves the exit code alone.
      console.error(`\nFAILED (REQUIRE_OPENAPI_COVERAGE=1): no test received a response of ${missing.join(', ')}`);
      process.exitCode = 1;
    }
  };
}
