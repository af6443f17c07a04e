// The agents resource's handlers (contract/src/resources/agents.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { actor } from './request.js';
import { agentsShown } from '../auth.js';
import type { Services } from '../../services.js';

const s = initServer();

export const agentsHandlers = ({ agents, releases }: Services) =>
  s.router(RESOURCES.agents.routes, {
    putAgent: async ({ params, headers, query, body, res }) => {
      const { agent, version, warnings, release } = await releases.put(
        headers['tenant-id'],
        params.slug,
        body,
        { activate: query.activate, note: query.note ?? 'PUT' },
        actor(res),
      );
      return { status: 200, body: { ...agent, stored_version: version, release, warnings } };
    },
    listAgents: async ({ headers, res }) => {
      const shown = agentsShown(res);
      const all = await agents.list(headers['tenant-id']);
      return { status: 200, body: { data: shown === 'all' ? all : all.filter((a) => shown.includes(a.slug)) } };
    },
    getAgent: async ({ params, headers }) => ({ status: 200, body: await agents.get(headers['tenant-id'], params.slug) }),
    deleteAgent: async ({ params, headers }) => {
      await agents.archive(headers['tenant-id'], params.slug);
      return { status: 204, body: undefined };
    },
  });
