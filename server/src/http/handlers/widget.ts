// The widget resource's handlers (contract/src/resources/widget.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES, type ConverseResponse } from '@switchboard/contract';
import { beginEventStream, streamConverse, wantsStream } from '../converse-stream.js';
import { widgetRequest } from './request.js';
import type { Services } from '../../services.js';

const s = initServer();

export const widgetHandlers = ({ widget, logger }: Services) =>
  s.router(RESOURCES.widget.routes, {
    getWidget: async ({ params, query, req, res }) => {
      const { key } = await widget.admit(widgetRequest(req, res, params.slug, query.key, {}));
      return { status: 200, body: await widget.settings(key, params.slug, query.language) };
    },
    widgetVisitor: async ({ params, query, headers, body, req, res }) => ({
      status: 200,
      body: await widget.visitorToken(widgetRequest(req, res, params.slug, query.key, headers), body.visitor_token),
    }),
    widgetConverse: async ({ params, query, headers, body, req, res }) => {
      const caller = await widget.caller(widgetRequest(req, res, params.slug, query.key, headers));
      if (!wantsStream(req)) return { status: 200, body: await widget.converse(caller, params.slug, body) };
      const stream = streamConverse(res, (onDelta) => widget.converse(caller, params.slug, body, onDelta), logger);
      return { status: 200, body: stream as unknown as ConverseResponse };
    },
    getWidgetConversation: async ({ params, query, headers, req, res }) => {
      const caller = await widget.caller(widgetRequest(req, res, params.slug, query.key, headers));
      return { status: 200, body: await widget.conversation(caller, params.slug, params.id) };
    },
    widgetEvents: async ({ params, query, headers, req, res }) => {
      const caller = await widget.caller(widgetRequest(req, res, params.slug, query.key, headers));
      const gone = new AbortController();
      req.on('close', () => gone.abort());
      const stream = await widget.events(caller, params.slug, params.id, headers['last-event-id'] ?? null, gone.signal);
      beginEventStream(res);
      return { status: 200, body: stream as unknown as string };
    },
  });
