// Audit: What the service decided and did for a conversation, hash-chained
import { TenantHeaders } from '../common.js';
import { AuditLogPage, AuditLogQuery, AuditVerification } from '../conversations.js';
import { initContract } from '@ts-rest/core';
import { ConversationParams, apiOptions, apiResource } from '../resource.js';
import { CONVERSATION, ORDER_STATUS, entry } from '../examples/fixtures.js';

const c = initContract();

export const audit = apiResource({
  tag: 'Audit',
  description: 'What the service decided and did for a conversation, hash-chained',
  routes: c.router(
    {
      getAuditLogs: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id/audit-logs',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        query: AuditLogQuery,
        responses: { 200: AuditLogPage },
        summary: 'Get the audit log of a conversation: routing decisions, action calls, timing',
      },
      verifyAuditLogs: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id/audit-logs/verify',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        responses: { 200: AuditVerification },
        summary: "Recompute a conversation's audit hash chain and report the first broken link",
      },
    },
    apiOptions,
  ),
  permissions: {
    getAuditLogs: 'read',
    verifyAuditLogs: 'read',
  },
  examples: {
    AuditPage: {
      summary: 'The routing decision, an action call and a status change of the conversation',
      value: {
        conversation_id: CONVERSATION,
        data: [
          entry(2, 0, 'status_change', { from: null, to: 'active', reason: 'created', outcome: null }),
          entry(3, 0, 'routing_decision', {
            strategy: 'classifier',
            selected: { capability: 'order_status', capability_id: ORDER_STATUS, score: 0.9942 },
            candidates: [
              { capability: 'order_status', score: 0.9942, eligible: true },
              { capability: 'human', score: 0.0001, eligible: true },
            ],
            threshold: 0.0007,
            similarity: 0.9999,
            min_similarity: 0.15,
            calibration: 'held_out',
            reason: 'best_match',
            model: 'tfidf-logreg-v3',
          }),
          entry(
            7,
            2,
            'action_call',
            {
              action: 'get_order',
              request: {
                method: 'GET',
                url: 'https://orders.example.com/orders/100001',
                headers: { 'user-agent': 'switchboard-actions/1', accept: 'application/json' },
              },
              response: { status: 200, body: { id: '100001', status: 'shipped', shipped_at: '2026-11-18', eta: '2026-11-24' } },
              outcome: 'ok',
              attempts: 1,
            },
            30.62,
          ),
          entry(9, 2, 'status_change', { from: 'active', to: 'completed', reason: 'flow_end', outcome: 'resolved' }),
        ],
        next_cursor: null,
      },
    },
    AuditPageMasked: {
      summary: "A turn's timing under a privacy policy: what it masked, by type and count, never the values (docs/privacy.md)",
      value: {
        conversation_id: CONVERSATION,
        data: [
          entry(
            12,
            4,
            'turn_timing',
            {
              total_ms: 14.2,
              routing_ms: 1.1,
              engine_ms: 0.4,
              actions_ms: 0,
              storage_ms: 2.3,
              turns: [
                { index: 4, hash: '1f3a5c7e9b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a' },
                { index: 5, hash: '9e7c5a3f1d8b6e4c2a0f9d7b5e3c1a8f6d4b2e0c9a7f5d3b1e8c6a4f2d0b9e7c' },
              ],
              masked: { card: 1, phone: 1 },
            },
            14.2,
          ),
        ],
        next_cursor: null,
      },
    },
    AuditVerified: {
      summary: 'Every entry chains to the one before it',
      value: { conversation_id: CONVERSATION, entries: 10, keyed_entries: 10, keyed_from: 1, valid: true, first_broken: null },
    },
  },
  operations: {
    getAuditLogs: { response: ['AuditPage', 'AuditPageMasked'] },
    verifyAuditLogs: { response: ['AuditVerified'] },
  },
});
