// The people resource's handlers (contract/src/resources/people.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import { permissionsOf } from '../../service/people/people-service.js';
import type { Services } from '../../services.js';

const s = initServer();

export const peopleHandlers = ({ people }: Services) =>
  s.router(RESOURCES.people.routes, {
    // eslint-disable-next-line @typescript-eslint/require-await -- a handler returns a promise; this one reads the request alone
    getIdentity: async ({ headers, res }) => {
      const grants = [...(res.locals.grants ?? [])];
      const person = res.locals.person;
      return {
        status: 200,
        body: {
          tenant_id: headers['tenant-id'],
          actor: res.locals.actor ?? { kind: 'gateway' },
          roles: grants,
          permissions: permissionsOf(grants),
          csrf_token: person?.csrf ?? null,
          session_expires_at: person?.expiresAt ?? null,
        },
      };
    },
    listPeople: async ({ headers }) => ({ status: 200, body: { data: await people.list(headers['tenant-id']) } }),
    putPersonRoles: async ({ headers, params, body }) => ({ status: 200, body: await people.setRoles(headers['tenant-id'], params.id, body.roles) }),
    listPersonSessions: async ({ headers, params }) => ({ status: 200, body: { data: await people.sessions(headers['tenant-id'], params.id) } }),
    endPersonSessions: async ({ headers, params }) => {
      await people.endSessions(headers['tenant-id'], params.id);
      return { status: 204, body: undefined };
    },
  });
