// The privacy resource's handlers (contract/src/resources/privacy.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES } from '@switchboard/contract';
import type { Services } from '../../services.js';

const s = initServer();

export const privacyHandlers = ({ privacy }: Services) =>
  s.router(RESOURCES.privacy.routes, {
    getPrivacyPolicy: async ({ headers }) => ({ status: 200, body: await privacy.get(headers['tenant-id']) }),
    putPrivacyPolicy: async ({ headers, body }) => ({ status: 200, body: await privacy.put(headers['tenant-id'], body) }),
    deletePrivacyPolicy: async ({ headers }) => {
      await privacy.delete(headers['tenant-id']);
      return { status: 204, body: undefined };
    },
  });
