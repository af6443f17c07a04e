// The versions resource's handlers (contract/src/resources/versions.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import { actor } from './request.js';
import type { Services } from '../../services.js';

const s = initServer();

export const versionsHandlers = ({ agents, releases, replays }: Services) =>
  s.router(RESOURCES.versions.routes, {
    listVersions: async ({ params, headers, query }) => {
      const before = decodeCursor(query.cursor, (v): v is number => Number.isSafeInteger(v) && (v as number) > 0);
      const rows = await agents.versions(headers['tenant-id'], params.slug, { limit: query.limit + 1, before });
      const page = rows.slice(0, query.limit);
      return { status: 200, body: { data: page, next_cursor: rows.length > query.limit ? encodeCursor(page[page.length - 1].version) : null } };
    },
    getVersion: async ({ params, headers }) => ({ status: 200, body: await agents.versionWithWarnings(headers['tenant-id'], params.slug, params.version) }),
    activateVersion: async ({ params, headers, query, res }) => ({
      status: 200,
      body: await releases.activate(headers['tenant-id'], params.slug, params.version, query, actor(res)),
    }),
    runTests: async ({ params, headers, body }) => ({ status: 200, body: await agents.test(headers['tenant-id'], params.slug, body) }),
    startReplay: async ({ params, headers, body }) => ({ status: 202, body: await replays.start(headers['tenant-id'], params.slug, body) }),
    listReplays: async ({ params, headers, query }) => ({ status: 200, body: await replays.list(headers['tenant-id'], params.slug, query) }),
    getReplay: async ({ params, headers }) => ({ status: 200, body: await replays.get(headers['tenant-id'], params.slug, params.id) }),
  });
