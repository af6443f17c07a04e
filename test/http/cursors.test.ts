// Page cursors are the client's to send back: a forged one (a position whose time or id is not a
// timestamp or a UUID) is a 400 on every database, never a query the database refuses (500) or
// compares meaninglessly (200).
import request from 'supertest';
import { beforeAll, expect, it } from 'vitest';
import type { App } from '../../server/src/app.js';
import { echoAgent } from '../helpers/agents.js';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';

warnIfPostgresSkipped();

const cursor = (position: unknown) => Buffer.from(JSON.stringify(position)).toString('base64url');

eachDatabase('forged cursors ($name)', (database) => {
  const f = appFixture(database, { agents: { echo: echoAgent } });
  let app: App;
  beforeAll(() => {
    app = f.app;
  });

  it('are refused with 400 by the lists of conversations, replays and webhook deliveries', async () => {
    const uuid = '6f1c2a10-5b3e-4c1d-9a7e-0b1c2d3e4f50';
    const forged = [
      ['not-a-time', 'x'],
      ['2026-11-26T10:00:00.000Z', 'not-a-uuid'],
      ['2026-13-45T99:00:00.000Z', uuid],
      ['tomorrow', uuid],
      [1, uuid],
      ['2026-11-26T10:00:00.000Z'],
    ];
    for (const path of ['conversations', 'replays', 'webhook-deliveries']) {
      for (const position of forged) {
        const r = await request(app.app)
          .get(`/api/v1/agents/echo/${path}`)
          .query({ cursor: cursor(position) })
          .set('tenant-id', 'acme');
        expect(r.status, `${path} ${JSON.stringify(position)}`).toBe(400);
        expect(r.body.errors).toEqual([{ path: 'query.cursor', message: 'not a cursor this endpoint returned' }]);
      }
      // A well-formed position pages on.
      const ok = await request(app.app)
        .get(`/api/v1/agents/echo/${path}`)
        .query({ cursor: cursor(['2026-11-26T10:00:00.000Z', uuid]) })
        .set('tenant-id', 'acme');
      expect(ok.status, path).toBe(200);
    }
  });
});
