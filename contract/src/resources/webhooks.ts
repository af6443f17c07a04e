// Webhooks: Deliveries of outgoing webhooks, with every attempt
import { TenantHeaders } from '../common.js';
import { WebhookDeliveriesQuery, WebhookDeliveryPage } from '../conversations.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';
import { CONVERSATION, T1 } from '../examples/fixtures.js';

const c = initContract();

export const webhooks = apiResource({
  tag: 'Webhooks',
  description: 'Deliveries of outgoing webhooks, with every attempt',
  routes: c.router(
    {
      listWebhookDeliveries: {
        method: 'GET',
        path: '/agents/:slug/webhook-deliveries',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: WebhookDeliveriesQuery,
        responses: { 200: WebhookDeliveryPage.describe('Webhook deliveries with every attempt, newest first') },
        summary: "List an agent's webhook deliveries and their attempts",
      },
    },
    apiOptions,
  ),
  permissions: {
    listWebhookDeliveries: 'read',
  },
  examples: {
    WebhookDeliveryPage: {
      summary: 'A delivered event',
      value: {
        data: [
          {
            id: '3c0e2a7b-7b4d-4c3e-9d55-0a6f1f3f9b21',
            conversation_id: CONVERSATION,
            event: 'conversation.completed',
            url: 'https://hooks.example.com/switchboard',
            status: 'delivered',
            attempts: 1,
            next_attempt_at: null,
            created_at: T1,
            delivered_at: '2026-11-24T10:05:42.310Z',
            last_status: 200,
            last_error: null,
            history: [{ attempt: 1, at: '2026-11-24T10:05:42.310Z', status: 200, error: null, duration_ms: 41 }],
          },
        ],
        next_cursor: null,
      },
    },
  },
  operations: {
    listWebhookDeliveries: { response: ['WebhookDeliveryPage'] },
  },
});
