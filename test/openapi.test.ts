import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contract } from '@switchboard/contract';
import { OPENAPI_FILE, renderOpenApi } from '../scripts/openapi.js';

describe('openapi.json', () => {
  it('is what the contract generates now (run `npm run openapi` after changing the contract)', () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(renderOpenApi());
  });

  it('documents every route of the contract with a summary and every error response', () => {
    const doc = JSON.parse(renderOpenApi());
    const routes = [...Object.values(contract.api), ...Object.values(contract.ops)];
    for (const route of routes) {
      const path = route.path.replace(/:([a-z_]+)/g, '{$1}');
      const op = doc.paths[path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      expect(op.summary).toBeTruthy();
      for (const [status, r] of Object.entries(op.responses as Record<string, { description: string }>)) {
        expect(r.description, `${route.method} ${route.path} ${status}`).not.toBe(status);
      }
    }
    const converse = doc.paths['/api/v1/agents/{slug}/converse'].post;
    const headers = converse.parameters.filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name);
    expect(headers).toEqual(expect.arrayContaining(['tenant-id', 'user-id', 'x-request-id', 'idempotency-key']));
  });
});
