// Operators: People taking over: messages, status moves, erasure
import { z } from 'zod';
import { Problem, TenantHeaders } from '../common.js';
import { ConversationDetail, Erased, OperatorMessage, OperatorMessageResult, StatusChange } from '../conversations.js';
import { initContract } from '@ts-rest/core';
import { ConversationParams, apiOptions, apiResource } from '../resource.js';
import { HANDED_OVER, T1 } from '../examples/fixtures.js';

const c = initContract();

export const operators = apiResource({
  tag: 'Operators',
  description: 'People taking over: messages, status moves, erasure',
  routes: c.router(
    {
      postOperatorMessage: {
        method: 'POST',
        path: '/agents/:slug/conversations/:id/messages',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        body: OperatorMessage,
        responses: {
          201: OperatorMessageResult,
          409: Problem.describe('The conversation is completed or abandoned (`conversation_closed`)'),
          422: Problem.describe('The conversation has reached its turn limit (`limit_exceeded`)'),
        },
        summary: 'Add an agent turn written by a human operator',
      },
      setStatus: {
        method: 'POST',
        path: '/agents/:slug/conversations/:id/status',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        body: StatusChange,
        responses: {
          200: ConversationDetail,
          409: Problem.describe('A move the status table does not allow (`invalid_transition`)'),
        },
        summary: 'Move a conversation to another status (operator)',
      },
      eraseConversation: {
        method: 'DELETE',
        path: '/agents/:slug/conversations/:id',
        pathParams: ConversationParams,
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: 'Erase the personal data of a conversation, keeping an audit skeleton',
      },
      eraseUserConversations: {
        method: 'DELETE',
        path: '/users/:user_id/conversations',
        pathParams: z.object({ user_id: z.string().min(1).max(256) }),
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 200: Erased.describe("The number of the tenant's conversations with this user that were erased") },
        summary: 'Erase the personal data of every conversation of one end user (GDPR erasure)',
      },
    },
    apiOptions,
  ),
  permissions: {
    postOperatorMessage: 'conversations.reply',
    setStatus: 'conversations.reply',
    eraseConversation: 'conversations.erase',
    eraseUserConversations: 'conversations.erase',
  },
  examples: {
    OperatorMessageRequest: { summary: 'A person answers', value: { message: 'Hi, this is Dana from support. Let me look into it.', author: 'dana' } },
    OperatorMessageResult: {
      summary: 'The turn it became',
      value: {
        conversation_id: HANDED_OVER,
        turn_index: 2,
        turn: { role: 'agent', message: 'Hi, this is Dana from support. Let me look into it.', timestamp: T1, phase: 'handoff', options: [], author: 'dana' },
      },
    },
    SetStatusRequest: { summary: 'Close a handed-over conversation', value: { status: 'completed', outcome: 'resolved_by_agent' } },
    Erased: { summary: "The user's conversations were erased", value: { erased: 3 } },
  },
  operations: {
    postOperatorMessage: { request: ['OperatorMessageRequest'], response: ['OperatorMessageResult'] },
    setStatus: { request: ['SetStatusRequest'], response: ['Conversation'] },
    eraseConversation: { response: [] },
    eraseUserConversations: { response: ['Erased'] },
  },
});
