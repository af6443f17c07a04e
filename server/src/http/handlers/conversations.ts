// The conversations resource's handlers (contract/src/resources/conversations.ts).
import { initServer } from '@ts-rest/express';
import { RESOURCES, type ConverseResponse } from '@switchboard/contract';
import { ForbiddenError } from '../../errors.js';
import { beginEventStream, streamConverse, wantsStream } from '../converse-stream.js';
import { requestId } from './request.js';
import { may } from '../auth.js';
import type { Services } from '../../services.js';

const s = initServer();

export const conversationsHandlers = ({ conversations, conversationReads, streams, logger }: Services) =>
  s.router(RESOURCES.conversations.routes, {
    converse: async ({ params, headers, body, req, res }) => {
      // Choosing a version (a draft, an old one) is for the team, not for a public widget's key.
      if (body.version !== undefined && !may(res, 'agents.write', params.slug))
        throw new ForbiddenError('Choosing a version needs the "agents.write" permission on this agent (roles: owner, builder)');
      const call = {
        tenantId: headers['tenant-id'],
        slug: params.slug,
        body,
        userIdHeader: headers['user-id'],
        requestId: requestId(res),
        idempotencyKey: headers['idempotency-key'],
      };
      if (!wantsStream(req)) return { status: 200, body: await conversations.converse(call) };
      const stream = streamConverse(res, (onDelta) => conversations.converse({ ...call, onDelta }), logger);
      return { status: 200, body: stream as unknown as ConverseResponse };
    },
    listConversations: async ({ params, headers, query }) => ({
      status: 200,
      body: await conversationReads.list(headers['tenant-id'], params.slug, query),
    }),
    getConversation: async ({ params, headers }) => ({
      status: 200,
      body: await conversationReads.detail(headers['tenant-id'], params.slug, params.id),
    }),
    getHistory: async ({ params, headers }) => ({
      status: 200,
      body: await conversationReads.history(headers['tenant-id'], params.slug, params.id),
    }),
    streamEvents: async ({ params, headers, req, res }) => {
      const c = await conversationReads.owned(headers['tenant-id'], params.slug, params.id);
      const last = headers['last-event-id'] ?? null;
      const gone = new AbortController();
      req.on('close', () => gone.abort());
      const stream = await streams.open({
        tenantId: c.tenantId,
        conversationId: c.id,
        createdAt: c.createdAt,
        lastEventId: last,
        keyId: res.locals.keyId ?? null,
        signal: gone.signal,
      });
      beginEventStream(res);
      // ts-rest pipes a stream body to the response as it is written.
      return { status: 200, body: stream as unknown as string };
    },
  });
