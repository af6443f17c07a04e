// Web chat widget: What the widget script calls from a page: a publishable key in `?key=`, a visitor token the service signed for the browser (docs/widget.md)
import { z } from 'zod';
import { Problem } from '../common.js';
import { ConverseResponse } from '../converse.js';
import {
  IdentityHeaders,
  VisitorHeaders,
  VisitorTokenRequest,
  VisitorTokenResponse,
  WidgetConversation,
  WidgetConverseRequest,
  WidgetQuery,
  WidgetSettings,
  WidgetSettingsQuery,
} from '../widget.js';
import { initContract } from '@ts-rest/core';
import { ConversationParams, LastEventId, SlugParams, publicResource, widgetOptions } from '../resource.js';
import { CONVERSATION, T0, ASK, problem } from '../examples/fixtures.js';

const c = initContract();

export const widget = publicResource({
  tag: 'Web chat widget',
  description: 'What the widget script calls from a page: a publishable key in `?key=`, a visitor token the service signed for the browser (docs/widget.md)',
  routes: c.router(
    {
      getWidget: {
        method: 'GET',
        path: '/agents/:slug',
        pathParams: SlugParams,
        query: WidgetSettingsQuery,
        responses: { 200: WidgetSettings },
        summary: 'How the widget presents an agent: title, greeting, colour, languages',
      },
      widgetVisitor: {
        method: 'POST',
        path: '/agents/:slug/visitor',
        pathParams: SlugParams,
        query: WidgetQuery,
        headers: IdentityHeaders,
        body: VisitorTokenRequest,
        responses: { 200: VisitorTokenResponse },
        summary: "A visitor token for this browser: a new visitor's, or the renewal of the one it holds",
        description:
          'The widget asks for one before its first request with a visitor, and renews it before it expires. New visitors are limited per client address and per key (docs/widget.md, "Limits"). A signed-in user\'s x-user-id and x-user-hash, when sent, are checked here too (403 when the hash is not their signature), so that a page with a wrong hash hears so when the widget loads.',
      },
      widgetConverse: {
        method: 'POST',
        path: '/agents/:slug/converse',
        pathParams: SlugParams,
        query: WidgetQuery,
        headers: VisitorHeaders,
        body: WidgetConverseRequest,
        responses: {
          200: ConverseResponse,
          409: Problem.describe('The conversation is completed or abandoned (`conversation_closed`)'),
          422: Problem.describe('A conversation over its turn or state limit (`limit_exceeded`)'),
        },
        summary: "A visitor's message: starts a conversation, or continues one the same visitor started",
        description: "With `accept: text/event-stream` the answer streams as server-sent events, as the API's converse does (`delta`, then `done` or `error`).",
      },
      getWidgetConversation: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id',
        pathParams: ConversationParams,
        query: WidgetQuery,
        headers: VisitorHeaders,
        responses: { 200: WidgetConversation },
        summary: "A visitor's own conversation with its turns (a reload resumes it)",
      },
      widgetEvents: {
        method: 'GET',
        path: '/agents/:slug/conversations/:id/events',
        pathParams: ConversationParams,
        query: WidgetQuery,
        headers: VisitorHeaders.extend({
          'last-event-id': LastEventId,
        }),
        responses: {
          200: c.otherResponse({
            contentType: 'text/event-stream',
            body: z.string().describe("Server-sent events of this conversation, as the API's events stream (docs/lifecycle.md)"),
          }),
        },
        summary: "Follow a visitor's own conversation: a person's replies, status changes",
      },
    },
    widgetOptions,
  ),
  examples: {
    WidgetSettings: {
      summary: 'How the widget presents the agent',
      value: {
        agent: 'acme-support',
        title: 'Acme support',
        greeting: 'Hi! Ask me about an order, a refund, or talk to a person.',
        accent: '#1f6feb',
        languages: ['en', 'es'],
      },
    },
    VisitorTokenNew: { summary: 'A first visit: no token held yet', value: {} },
    VisitorTokenIssued: {
      summary: "A new visitor's token",
      value: {
        visitor_token: 'v1.Q2hhdFZpc2l0b3IwMDAwMQ.1764064800.3qfVn2bXh8a1rT0kYw5cJp7LmN4sZ6dE9gH2iK_oUxA',
        expires_at: '2026-11-25T10:00:00.000Z',
        renewed: false,
      },
    },
    WidgetConverseStart: {
      summary: "A visitor's first message",
      value: { message: 'where is my order?', language: 'en', page_url: 'https://shop.example.com/orders' },
    },
    WidgetConversation: {
      summary: "The visitor's conversation, as a reload shows it again",
      value: {
        conversation_id: CONVERSATION,
        status: 'active',
        awaiting_input: true,
        turns: [
          { index: 0, role: 'user', message: 'where is my order?', timestamp: T0 },
          { index: 1, role: 'agent', message: ASK, timestamp: T0, options: [] },
        ],
      },
    },
    WidgetOriginRefused: {
      summary: 'A page of an origin the key does not allow',
      value: problem(403, 'Forbidden', 'forbidden', "This key does not allow pages of https://elsewhere.example: add the origin to the key's allowed origins"),
    },
  },
  operations: {
    getWidget: { response: ['WidgetSettings'], problems: { 403: ['WidgetOriginRefused'] } },
    widgetVisitor: { request: ['VisitorTokenNew'], response: ['VisitorTokenIssued'], problems: { 403: ['WidgetOriginRefused'] } },
    widgetConverse: {
      request: ['WidgetConverseStart'],
      response: ['ConverseAsked', 'ConverseDone'],
      problems: { 403: ['WidgetOriginRefused'], 409: ['ConversationClosed'] },
    },
    getWidgetConversation: { response: ['WidgetConversation'] },
    widgetEvents: { response: ['ConversationEvents'] },
  },
});
