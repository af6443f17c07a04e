import { CONVERSATION, EVALUATION, KEY, REPLAY, WIDGET_KEY } from './fixtures.js';

/**
 * An example of each parameter, by `in:name`, or `operationId in:name` where one name means
 * another thing: values that work against `npm start`, which holds the README's conversation
 * under its id here (scripts/demo.ts). Optional parameters whose only valid values the server
 * hands out (a cursor, last-event-id, a user hash) have none, so that converters leave them out
 * rather than send a made-up one.
 */
export const PARAMETER_EXAMPLES: Partial<Record<string, string | number>> = {
  'path:slug': 'acme-support',
  'path:id': CONVERSATION,
  'getReplay path:id': REPLAY,
  'getEvaluation path:id': EVALUATION,
  'query:reason': 'fallback',
  'listReview query:status': 'open',
  'query:since': '2026-11-01T00:00:00Z',
  'query:until': '2026-12-01T00:00:00Z',
  'revokeKey path:id': KEY,
  'path:version': 1,
  'path:name': 'ORDERS_TOKEN',
  'path:source': 'help-centre',
  'putSite path:source': 'shop-help',
  'syncSource path:source': 'shop-help',
  'listPages path:source': 'shop-help',
  'query:tag': 'help',
  'query:q': 'how long does a refund take?',
  'query:sources': 'help-centre,tag:help',
  'path:user_id': 'u-42',
  'header:user-id': 'u-42',
  'header:idempotency-key': 'order-100001-check',
  'header:x-request-id': 'readme-conversation-1',
  'header:x-visitor-token': 'v1.Q2hhdFZpc2l0b3IwMDAwMQ.1764064800.3qfVn2bXh8a1rT0kYw5cJp7LmN4sZ6dE9gH2iK_oUxA',
  'query:key': WIDGET_KEY,
  'query:user_id': 'u-42',
  'query:conversation_id': CONVERSATION,
  'query:capability': 'order_status',
  'query:created_after': '2026-11-01T00:00:00Z',
  'query:created_before': '2026-12-01T00:00:00Z',
  'query:from': '2026-11-01T00:00:00Z',
  'query:to': '2026-12-01T00:00:00Z',
  'query:language': 'en',
  'query:status': 'completed',
  'listWebhookDeliveries query:status': 'failed',
  'query:channel': 'api',
  'listChannelDeliveries query:channel': 'slack',
  'listChannelDeliveries query:status': 'failed',
  'path:channel': 'slack',
  'query:type': 'routing_decision',
  'query:activate': 'true',
  'query:force': 'false',
  'activateVersion query:reason': 'Tests updated with the new order lookup',
  'promoteSplit query:reason': 'Candidate contained more conversations',
  'endSplit query:reason': 'Candidate escalates more',
  'query:interval': 'day',
};
