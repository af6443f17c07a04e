// Conversations: Talk to an agent, and read conversations, their turns and live state
import { z } from 'zod';
import { ConverseHeaders, Problem, TenantHeaders } from '../common.js';
import { Conversation, ConversationDetail, ConversationPage, ListConversationsQuery } from '../conversations.js';
import { ConverseRequest, ConverseResponse } from '../converse.js';
import { initContract } from '@ts-rest/core';
import { ConversationParams, LastEventId, SlugParams, apiOptions, apiResource } from '../resource.js';
import { CONVERSATION, ASK, SHIPPED, T0, context, record, summary } from '../examples/fixtures.js';

const c = initContract();

export const conversations = apiResource({
  tag: 'Conversations',
  description: 'Talk to an agent, and read conversations, their turns and live state',
  routes: c.router(
    {
      converse: {
        method: 'POST',
        path: '/agents/:slug/converse',
        pathParams: SlugParams,
        headers: ConverseHeaders,
        body: ConverseRequest,
        responses: {
          200: ConverseResponse,
          409: Problem.describe('The conversation is completed or abandoned (`conversation_closed`)'),
          422: Problem.describe(
            'Same idempotency key with another body (`idempotency_mismatch`), or a conversation over its turn or state limit (`limit_exceeded`)',
          ),
        },
        summary: 'Send a message to an agent, starting or continuing a conversation',
        description:
          'With `accept: text/event-stream` the answer is a stream of server-sent events: `delta` events (`{"text": "…"}`) as the reply is written, then `done` with this ConverseResponse, or `error` with a problem document (docs/generative.md).',
      },
      listConversations: {
        method: 'GET',
        path: '/agents/:slug/conversations',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ListConversationsQuery,
        responses: { 200: ConversationPage.describe('Conversation summaries, newest first') },
        summary: "List an agent's conversations, newest first",
      },
      getConversation: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        responses: { 200: ConversationDetail },
        summary: 'Get a conversation with its turns and live state',
      },
      getHistory: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id/history',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        responses: { 200: Conversation },
        summary: 'Get a conversation record with its turns, oldest first',
      },
      streamEvents: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id/events',
        pathParams: ConversationParams,
        headers: TenantHeaders.extend({
          'last-event-id': LastEventId,
        }),
        responses: {
          200: c.otherResponse({
            contentType: 'text/event-stream',
            body: z
              .string()
              .describe(
                'Server-sent events `turn.created`, `status.changed`, `phase.changed`, each with an `id` to resume from (Last-Event-ID) and JSON `data`; a `: ping` comment every 15 s. Without Last-Event-ID the stream starts with the next event.',
              ),
          }),
        },
        summary: "Stream a conversation's events (server-sent events)",
      },
    },
    apiOptions,
  ),
  permissions: {
    converse: 'converse',
    listConversations: 'read',
    getConversation: 'read',
    getHistory: 'read',
    streamEvents: 'read',
  },
  examples: {
    ConverseStart: { summary: 'Start a conversation', value: { message: 'where is my order?', context } },
    ConverseContinue: { summary: 'Continue one (with the conversation_id an answer gave)', value: { message: '100001', conversation_id: CONVERSATION } },
    ConverseAsked: {
      summary: 'The agent asks for what it needs',
      value: {
        conversation_id: CONVERSATION,
        response: { message: ASK, phase: 'ask_order', awaiting_input: true, options: [] },
        state: { status: 'active', capability: 'order_status' },
      },
    },
    ConverseDone: {
      summary: 'The agent called the orders API and answered',
      value: {
        conversation_id: CONVERSATION,
        response: { message: SHIPPED, phase: 'shipped', awaiting_input: false, options: [] },
        state: { status: 'completed', capability: 'order_status' },
      },
    },
    ConversationPage: {
      summary: 'One page of conversations',
      value: { data: [{ ...summary, capability: 'order_status', turn_count: 4, channel: null }], next_cursor: null },
    },
    Conversation: {
      summary: 'A conversation with its state',
      value: {
        ...record,
        capability: 'order_status',
        phase: 'shipped',
        awaiting_input: false,
        agent_version: 2,
        slots: { order_id: '100001', eta: '2026-11-24' },
        context,
        erased_at: null,
        channel: null,
      },
    },
    History: { summary: 'A conversation with its turns, oldest first', value: record },
    HistoryMasked: {
      summary: 'A conversation kept under a privacy policy: personal data as typed placeholders (docs/privacy.md)',
      value: {
        ...record,
        status: 'escalated',
        outcome: null,
        completed_at: null,
        turns: [
          { role: 'user', message: 'I was charged twice on my card [CARD …1111], call me on [PHONE …0958]', timestamp: T0 },
          { role: 'agent', message: 'Let me hand you to a person who can look into the charge.', timestamp: T0, phase: 'handoff', options: [] },
        ],
      },
    },
    ConversationEvents: {
      summary: 'Two turns and a phase change, then a keep-alive comment',
      value:
        'id: 412-0\nevent: turn.created\ndata: {"index":2,"role":"user","message":"100001","timestamp":"2026-11-24T10:05:42.033Z"}\n\n' +
        'id: 412-1\nevent: turn.created\ndata: {"index":3,"role":"agent","message":"Order 100001 shipped on 2026-11-18 and should arrive by 2026-11-24.","timestamp":"2026-11-24T10:05:42.033Z","phase":"shipped","options":[]}\n\n' +
        'id: 412-2\nevent: phase.changed\ndata: {"capability":"order_status","from":"lookup","to":"shipped"}\n\n: ping\n\n',
    },
  },
  operations: {
    converse: {
      request: ['ConverseStart', 'ConverseContinue'],
      response: ['ConverseAsked', 'ConverseDone'],
      problems: {
        400: ['ValidationError', 'TenantRequired'],
        401: ['Unauthorized'],
        404: ['AgentNotFound'],
        409: ['ConversationClosed'],
        422: ['LimitExceeded'],
      },
    },
    listConversations: { response: ['ConversationPage'], problems: { 404: ['AgentNotFound'] } },
    getConversation: { response: ['Conversation'] },
    getHistory: { response: ['History', 'HistoryMasked'] },
    streamEvents: { response: ['ConversationEvents'] },
  },
});
