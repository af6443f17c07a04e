// Analytics: How an agent's conversations went
import { AgentAnalytics, AnalyticsQuery } from '../analytics.js';
import { TenantHeaders } from '../common.js';
import { initContract } from '@ts-rest/core';
import { SlugParams, apiOptions, apiResource } from '../resource.js';

const c = initContract();

export const analytics = apiResource({
  tag: 'Analytics',
  description: "How an agent's conversations went",
  routes: c.router(
    {
      getAnalytics: {
        method: 'GET',
        path: '/agents/:slug/analytics',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: AnalyticsQuery,
        responses: { 200: AgentAnalytics.describe("The agent's analytics over the window") },
        summary: "How an agent's conversations went over a window: counts, rates, medians, capabilities, outcomes and a series",
        description:
          'Computed in the database from hourly counters that each write keeps exact. The window is whole UTC hours (`from` rounded down, `to` up; default the last 7 days by day); see docs/observability.md for what each field counts.',
      },
    },
    apiOptions,
  ),
  permissions: {
    getAnalytics: 'read',
  },
  examples: {
    Analytics: {
      summary: 'A week of conversations',
      value: {
        from: '2026-11-18T00:00:00.000Z',
        to: '2026-11-25T00:00:00.000Z',
        interval: 'day',
        conversations: { started: 120, completed: 96, escalated: 18, abandoned: 6, active: 0 },
        rates: { containment: 0.8, escalation: 0.15, abandonment: 0.05, fallback: 0.04 },
        turns_per_conversation_p50: 4,
        duration_seconds_p50: 38,
        capabilities: [
          { name: 'order_status', conversations: 92, completed: 84, escalated: 4, abandoned: 4 },
          { name: 'human', conversations: 28, completed: 12, escalated: 14, abandoned: 2 },
        ],
        outcomes: [
          { outcome: 'resolved', count: 84 },
          { outcome: 'escalated', count: 18 },
        ],
        series: [
          { start: '2026-11-23T00:00:00.000Z', started: 17, completed: 14, escalated: 2, abandoned: 1 },
          { start: '2026-11-24T00:00:00.000Z', started: 21, completed: 17, escalated: 3, abandoned: 1 },
        ],
        channels: [
          { channel: 'api', started: 80, completed: 66, escalated: 10, abandoned: 4 },
          { channel: 'web', started: 40, completed: 30, escalated: 8, abandoned: 2 },
        ],
        versions: [
          {
            version: 3,
            started: 60,
            completed: 50,
            escalated: 7,
            abandoned: 3,
            closed: 60,
            routed: 70,
            fallback: 2,
            rates: { containment: 0.8333, escalation: 0.1167, fallback: 0.0286, completion: 0.8333 },
            intervals: { containment: [0.7201, 0.9071], escalation: [0.0577, 0.2219], fallback: [0.0079, 0.0984], completion: [0.7201, 0.9071] },
            turns_per_conversation_p50: 4,
            duration_seconds_p50: 35,
          },
          {
            version: 2,
            started: 60,
            completed: 46,
            escalated: 11,
            abandoned: 3,
            closed: 60,
            routed: 72,
            fallback: 3,
            rates: { containment: 0.7667, escalation: 0.1833, fallback: 0.0417, completion: 0.7667 },
            intervals: { containment: [0.6456, 0.8556], escalation: [0.1055, 0.2996], fallback: [0.0143, 0.1156], completion: [0.6456, 0.8556] },
            turns_per_conversation_p50: 4,
            duration_seconds_p50: 41,
          },
        ],
        knowledge: {
          sources: [
            { source: 'help-centre', cited: 9 },
            { source: 'shop-help', cited: 4 },
          ],
          unanswered: 3,
        },
      },
    },
  },
  operations: {
    getAnalytics: { response: ['Analytics'] },
  },
});
