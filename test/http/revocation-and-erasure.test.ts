// What outlives a revoked key or an erased person: neither an open event stream, nor text in
// SQLite's free pages and WAL, nor user ids in request logs.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../server/src/app.js';
import { sqliteFileFromUrl } from '../../server/src/store/db.js';
import { echoAgent } from '../helpers/agents.js';
import { databases, eachDatabase } from '../helpers/databases.js';
import { testApp, testConfig } from '../helpers/servers.js';
import { openSse } from '../helpers/sse.js';

eachDatabase('a revoked key on $name', (database) => {
  it('ends the event streams opened with it', async () => {
    const { db, drop } = await database.create();
    const app = testApp(db, { authMode: 'api_key', sseHeartbeatMs: 200 });
    const server = app.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const admin = await app.keys.create('a', ['admin', 'read', 'converse']);
      const reader = await app.keys.create('a', ['read']);
      const h = (k: string) => ({ 'tenant-id': 'a', authorization: `Bearer ${k}` });
      await request(app.app).put('/api/v1/agents/echo').set(h(admin.key)).send(echoAgent).expect(200);
      const id = (await request(app.app).post('/api/v1/agents/echo/converse').set(h(admin.key)).send({ message: 'echo this' })).body.conversation_id;
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1/agents/echo/conversations/${id}/events`;
      const stream = await openSse(base, h(reader.key));
      expect(stream.status).toBe(200);
      await request(app.app).delete(`/api/v1/keys/${reader.id}`).set(h(admin.key)).expect(204);
      // Ends at once: no more events, then the end of the stream.
      let e;
      do e = await stream.next(3000);
      while (e && !e.event);
      expect(e).toBeNull();
      stream.close();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await app.close();
      await drop();
    }
  });
});

describe('erasure on SQLite', () => {
  it('leaves no erased text in the database file or its WAL', async () => {
    const { db, url, drop } = await databases[0].create();
    const app = testApp(db);
    try {
      await request(app.app).put('/api/v1/agents/echo').set('tenant-id', 'a').send(echoAgent).expect(200);
      const marker = `ERASE-ME-${Date.now()}-zebra-quartz`;
      const id = (await request(app.app).post('/api/v1/agents/echo/converse').set({ 'tenant-id': 'a', 'user-id': 'u-erase' }).send({ message: 'echo this' }))
        .body.conversation_id;
      for (let i = 0; i < 5; i++) {
        await request(app.app)
          .post('/api/v1/agents/echo/converse')
          .set({ 'tenant-id': 'a' })
          .send({ message: `${marker} ${i}`, conversation_id: id })
          .expect(200);
      }
      const files = () => {
        const dir = dirname(sqliteFileFromUrl(url)!);
        return readdirSync(dir)
          .map((f) => readFileSync(`${dir}/${f}`).toString('latin1'))
          .join('');
      };
      expect(files()).toContain(marker);
      await request(app.app).delete('/api/v1/users/u-erase/conversations').set('tenant-id', 'a').expect(200);
      expect(files()).not.toContain(marker);
    } finally {
      await app.close();
      await drop();
    }
  });
});

describe('request logs', () => {
  it('name route patterns, never paths or queries that carry user ids', async () => {
    const { db, drop } = await databases[0].create();
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
    const app = createApp(testConfig(), { db, logger: pino({ level: 'info' }, sink) });
    try {
      await request(app.app).put('/api/v1/agents/echo').set('tenant-id', 'a').send(echoAgent).expect(200);
      await request(app.app).get('/api/v1/agents/echo/conversations').query({ user_id: 'user-in-query-77' }).set('tenant-id', 'a').expect(200);
      await request(app.app).delete('/api/v1/users/user-in-path-88/conversations').set('tenant-id', 'a').expect(200);
      await request(app.app).get('/api/v1/no/such/user-in-404-99').set('tenant-id', 'a').expect(404);
      const log = lines.join('');
      expect(log).toContain('/api/v1/users/:user_id/conversations');
      for (const id of ['user-in-query-77', 'user-in-path-88', 'user-in-404-99']) expect(log).not.toContain(id);
    } finally {
      await app.close();
      await drop();
    }
  });
});
