// The contract's handlers, one module per resource (handlers/): each reads the tenant and request
// id and calls a service.
import { initServer } from '@ts-rest/express';
import { contract } from '@switchboard/contract';
import type { Services } from '../services.js';
import { conversationsHandlers } from './handlers/conversations.js';
import { auditHandlers } from './handlers/audit.js';
import { operatorsHandlers } from './handlers/operators.js';
import { agentsHandlers } from './handlers/agents.js';
import { versionsHandlers } from './handlers/versions.js';
import { analyticsHandlers } from './handlers/analytics.js';
import { reviewHandlers } from './handlers/review.js';
import { evaluationsHandlers } from './handlers/evaluations.js';
import { releasesHandlers } from './handlers/releases.js';
import { webhooksHandlers } from './handlers/webhooks.js';
import { channelsHandlers } from './handlers/channels.js';
import { keysHandlers } from './handlers/keys.js';
import { secretsHandlers } from './handlers/secrets.js';
import { privacyHandlers } from './handlers/privacy.js';
import { peopleHandlers } from './handlers/people.js';
import { authHandlers } from './handlers/auth.js';
import type { SessionCookies } from './session-cookie.js';
import { knowledgeHandlers } from './handlers/knowledge.js';
import { usageHandlers } from './handlers/usage.js';
import { operationsHandlers } from './handlers/operations.js';
import { widgetHandlers } from './handlers/widget.js';

const s = initServer();

export function createRouter(services: Services, opts: { metricsToken: string | null; cookies: SessionCookies; serviceOrigin: string | null }) {
  return s.router(contract, {
    api: {
      ...conversationsHandlers(services),
      ...auditHandlers(services),
      ...operatorsHandlers(services),
      ...agentsHandlers(services),
      ...versionsHandlers(services),
      ...analyticsHandlers(services),
      ...reviewHandlers(services),
      ...evaluationsHandlers(services),
      ...releasesHandlers(services),
      ...webhooksHandlers(services),
      ...channelsHandlers(services),
      ...keysHandlers(services),
      ...secretsHandlers(services),
      ...privacyHandlers(services),
      ...peopleHandlers(services),
      ...knowledgeHandlers(services),
      ...usageHandlers(services),
    },
    ops: operationsHandlers(services, opts),
    widget: widgetHandlers(services),
    auth: authHandlers(services, opts.cookies, opts.serviceOrigin),
  });
}
