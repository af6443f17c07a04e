// The request log: one line per request at `info`; below it, only answers of 4xx (warn) and 5xx
// (error), with the same fields, and no per-request work for the rest.
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { requestId } from '../../server/src/http/request-id.js';
import { requestLog } from '../../server/src/http/request-log.js';

function appLogging(level: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const app = express();
  app.use(requestId());
  app.use(requestLog({ logger }));
  app.get('/ok', (_req, res) => {
    res.locals.route = '/ok';
    res.json({ ok: true });
  });
  app.get('/refused', (_req, res) => void res.status(404).json({}));
  app.get('/failed', (_req, res) => void res.status(503).json({}));
  return { app, lines };
}

describe('request log', () => {
  it('at info: every request, with its route, status and time', async () => {
    const { app, lines } = appLogging('info');
    await request(app).get('/ok').set('tenant-id', 'acme').set('x-request-id', 'r-1');
    await request(app).get('/refused');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      route: '/ok',
      req: { id: 'r-1', method: 'GET', tenant: 'acme' },
      res: { statusCode: 200 },
    });
    expect(lines[1]).toMatchObject({ level: 40, res: { statusCode: 404 } });
  });

  it('below info: only refused (warn) and failed (error) requests, with the same fields', async () => {
    const { app, lines } = appLogging('warn');
    await request(app).get('/ok');
    await request(app).get('/refused').set('tenant-id', 'acme').set('x-request-id', 'r-2');
    await request(app).get('/failed');
    expect(lines.map((l) => l.level)).toEqual([40, 50]);
    expect(lines[0]).toMatchObject({ msg: 'request completed', req: { id: 'r-2', method: 'GET', tenant: 'acme' }, res: { statusCode: 404 } });
    expect(typeof lines[0].responseTime).toBe('number');

    const quiet = appLogging('error');
    await request(quiet.app).get('/refused');
    await request(quiet.app).get('/failed');
    expect(quiet.lines.map((l) => l.level)).toEqual([50]);
  });
});
