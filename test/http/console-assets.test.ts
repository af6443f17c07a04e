// /console: the built files with their security headers, caching and compression, the page for every path
// under it, a problem document for a missing file, and a clear one when the console is not built.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import request from 'supertest';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleRouter } from '../../server/src/http/console.js';
import { errorHandler } from '../../server/src/http/problem.js';

const dir = mkdtempSync(join(tmpdir(), 'switchboard-console-'));
mkdirSync(join(dir, 'assets'));
writeFileSync(join(dir, 'index.html'), '<!doctype html><title>console</title>');
writeFileSync(join(dir, 'assets', 'index-abc123.js'), `${'console.log("a script long enough to be worth compressing");\n'.repeat(200)}`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function app(from: string) {
  const a = express();
  a.use('/console', consoleRouter(from));
  a.use(errorHandler(pino({ level: 'silent' })));
  return a;
}

describe('the console files', () => {
  it('serves the page for every path under /console, with a content security policy and no caching', async () => {
    expect((await request(app(dir)).get('/console').expect(301)).headers.location).toBe('/console/');
    for (const path of ['/console/', '/console/agents/acme-support/conversations/123']) {
      const res = await request(app(dir)).get(path).expect(200);
      expect(res.text).toContain('<title>console</title>');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['cache-control']).toBe('no-cache');
    }
  });

  it('serves hashed assets for a year, and a problem document for one that does not exist', async () => {
    const asset = await request(app(dir)).get('/console/assets/index-abc123.js').set('accept-encoding', 'gzip').expect(200);
    expect(asset.headers['cache-control']).toContain('immutable');
    expect(asset.headers['content-encoding']).toBe('gzip');
    expect(asset.text).toContain('worth compressing');
    const missing = await request(app(dir)).get('/console/assets/index-gone.js').expect(404);
    expect(missing.headers['content-type']).toContain('application/problem+json');
    expect(missing.body.code).toBe('not_found');
  });

  it('says how to build the console when it is not built', async () => {
    const res = await request(app(join(dir, 'nowhere')))
      .get('/console/')
      .expect(404);
    expect(res.body.detail).toContain('npm run build:console');
  });
});
