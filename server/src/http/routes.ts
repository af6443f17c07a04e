// The contract's handlers: each reads the tenant and request id and calls a service.
import { initServer } from '@ts-rest/express';
import { contract, type ConverseResponse } from '@switchboard/contract';
import { sameText } from '../lib/same-text.js';
import { clientAddress, requestOrigin } from './origin.js';
import { ForbiddenError, UnauthorizedError, UnavailableError } from '../errors.js';
import { decodeCursor, encodeCursor } from '../lib/cursor.js';
import type { Services } from '../services.js';
import type { Request, Response } from 'express';
import type { WidgetRequest } from '../service/widget.js';
import { beginEventStream, streamConverse, wantsStream } from './converse-stream.js';

const s = initServer();

const requestId = (res: { getHeader(n: string): unknown }) => String(res.getHeader('x-request-id'));

/** Who makes a release: the API key (AUTH_MODE=api_key) and the request. */
const actor = (res: Response) => ({ keyId: res.locals.keyId ?? null, requestId: requestId(res) });

/** Whether a request's authorization header carries the metrics token (compared in constant time). */
function carriesToken(header: string | undefined, token: string): boolean {
  return sameText(header ?? '', `Bearer ${token}`);
}

/** What a widget request says of its key, page and visitor (the visitor headers are checked by the contract). */
function widgetRequest(
  req: Request,
  res: Response,
  slug: string,
  key: string,
  h: { 'x-visitor-token'?: string; 'x-user-id'?: string; 'x-user-hash'?: string },
): WidgetRequest {
  return {
    key,
    slug,
    origin: req.headers.origin,
    visitorToken: h['x-visitor-token'],
    userIdClaim: h['x-user-id'],
    userHash: h['x-user-hash'],
    address: clientAddress(req),
    requestId: requestId(res),
    known: res.locals.widgetKey,
  };
}

export function createRouter(
  {
    agents,
    analytics,
    conversations,
    lifecycle,
    streams,
    keys,
    secrets,
    webhookLog,
    replays,
    review,
    evaluations,
    releases,
    metrics,
    ping,
    drain,
    logger,
    widget,
    channels,
  }: Services,
  opts: { metricsToken: string | null },
) {
  return s.router(contract, {
    api: {
      converse: async ({ params, headers, body, req, res }) => {
        // Choosing a version (a draft, an old one) is for the team, not for a public widget's key.
        const scopes = res.locals.scopes;
        if (body.version !== undefined && scopes && !scopes.includes('admin')) throw new ForbiddenError('Choosing a version needs the "admin" scope');
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
        body: await conversations.list(headers['tenant-id'], params.slug, query),
      }),
      getConversation: async ({ params, headers }) => ({
        status: 200,
        body: await conversations.detail(headers['tenant-id'], params.slug, params.id),
      }),
      getHistory: async ({ params, headers }) => ({
        status: 200,
        body: await conversations.history(headers['tenant-id'], params.slug, params.id),
      }),
      getAuditLogs: async ({ params, headers, query }) => ({
        status: 200,
        body: await conversations.audit(headers['tenant-id'], params.slug, params.id, query),
      }),
      verifyAuditLogs: async ({ params, headers }) => ({
        status: 200,
        body: await conversations.verifyAudit(headers['tenant-id'], params.slug, params.id),
      }),
      streamEvents: async ({ params, headers, req, res }) => {
        const c = await conversations.owned(headers['tenant-id'], params.slug, params.id);
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
      postOperatorMessage: async ({ params, headers, body, res }) => ({
        status: 201,
        body: await lifecycle.operatorMessage({ tenantId: headers['tenant-id'], ...params, requestId: requestId(res) }, body),
      }),
      setStatus: async ({ params, headers, body, res }) => ({
        status: 200,
        body: await lifecycle.setStatus({ tenantId: headers['tenant-id'], ...params, requestId: requestId(res) }, { to: body.status, outcome: body.outcome }),
      }),
      eraseConversation: async ({ params, headers, res }) => {
        await lifecycle.erase({ tenantId: headers['tenant-id'], ...params, requestId: requestId(res) });
        return { status: 204, body: undefined };
      },
      eraseUserConversations: async ({ params, headers }) => ({
        status: 200,
        body: { erased: await lifecycle.eraseUser(headers['tenant-id'], params.user_id) },
      }),
      listWebhookDeliveries: async ({ params, headers, query }) => ({
        status: 200,
        body: await webhookLog.list(headers['tenant-id'], params.slug, query),
      }),
      listChannels: async ({ params, headers, req }) => ({
        status: 200,
        body: { data: await channels.list(headers['tenant-id'], params.slug, requestOrigin(req)) },
      }),
      putChannel: async ({ params, headers, body, req }) => ({
        status: 200,
        body: await channels.put(headers['tenant-id'], params.slug, params.channel, body, requestOrigin(req)),
      }),
      patchChannel: async ({ params, headers, body, req }) => ({
        status: 200,
        body: await channels.setStatus(headers['tenant-id'], params.slug, params.channel, body.status, requestOrigin(req)),
      }),
      deleteChannel: async ({ params, headers }) => {
        await channels.remove(headers['tenant-id'], params.slug, params.channel);
        return { status: 204, body: undefined };
      },
      listChannelDeliveries: async ({ params, headers, query }) => ({
        status: 200,
        body: await channels.deliveries(headers['tenant-id'], params.slug, query),
      }),
      createKey: async ({ headers, body }) => ({
        status: 201,
        body: body.widget
          ? await keys.createPublishable(headers['tenant-id'], body.widget, body.name)
          : await keys.create(headers['tenant-id'], body.scopes!, body.name),
      }),
      listKeys: async ({ headers }) => ({ status: 200, body: { data: await keys.list(headers['tenant-id']) } }),
      revokeKey: async ({ headers, params }) => {
        await keys.revoke(headers['tenant-id'], params.id);
        streams.endForKeys([params.id]);
        return { status: 204, body: undefined };
      },
      putSecret: async ({ headers, params, body }) => {
        await secrets.put(headers['tenant-id'], params.name, body.value);
        return { status: 204, body: undefined };
      },
      listSecrets: async ({ headers }) => ({ status: 200, body: { data: await secrets.list(headers['tenant-id']) } }),
      deleteSecret: async ({ headers, params }) => {
        await secrets.delete(headers['tenant-id'], params.name);
        return { status: 204, body: undefined };
      },
      putAgent: async ({ params, headers, query, body, res }) => {
        const { agent, version, warnings, release } = await releases.put(headers['tenant-id'], params.slug, body, { activate: query.activate }, actor(res));
        return { status: 200, body: { ...agent, stored_version: version, release, warnings } };
      },
      listVersions: async ({ params, headers, query }) => {
        const before = decodeCursor(query.cursor, (v): v is number => Number.isSafeInteger(v) && (v as number) > 0);
        const rows = await agents.versions(headers['tenant-id'], params.slug, { limit: query.limit + 1, before });
        const page = rows.slice(0, query.limit);
        return { status: 200, body: { data: page, next_cursor: rows.length > query.limit ? encodeCursor(page[page.length - 1].version) : null } };
      },
      getVersion: async ({ params, headers }) => ({ status: 200, body: await agents.versionWithWarnings(headers['tenant-id'], params.slug, params.version) }),
      getAnalytics: async ({ params, headers, query }) => ({ status: 200, body: await analytics.get(headers['tenant-id'], params.slug, query) }),
      startReplay: async ({ params, headers, body }) => ({ status: 202, body: await replays.start(headers['tenant-id'], params.slug, body) }),
      listReplays: async ({ params, headers, query }) => ({ status: 200, body: await replays.list(headers['tenant-id'], params.slug, query) }),
      getReplay: async ({ params, headers }) => ({ status: 200, body: await replays.get(headers['tenant-id'], params.slug, params.id) }),
      listReview: async ({ params, headers, query }) => ({ status: 200, body: await review.list(headers['tenant-id'], params.slug, query) }),
      actOnReview: async ({ params, headers, body, res }) => ({
        status: 200,
        body: await review.act(headers['tenant-id'], params.slug, body, res.locals.keyId ?? null),
      }),
      getTestSuite: async ({ params, headers }) => ({ status: 200, body: await review.testSuite(headers['tenant-id'], params.slug) }),
      putTestSuite: async ({ params, headers, body }) => ({ status: 200, body: await review.putTestSuite(headers['tenant-id'], params.slug, body.tests) }),
      startEvaluation: async ({ params, headers, body, res }) => ({
        status: 202,
        body: await evaluations.start(headers['tenant-id'], params.slug, params.version, body, res.locals.keyId ?? null),
      }),
      listEvaluations: async ({ params, headers, query }) => ({ status: 200, body: await evaluations.list(headers['tenant-id'], params.slug, query) }),
      getEvaluation: async ({ params, headers }) => ({ status: 200, body: await evaluations.get(headers['tenant-id'], params.slug, params.id) }),
      runTests: async ({ params, headers, body }) => ({ status: 200, body: await agents.test(headers['tenant-id'], params.slug, body) }),
      activateVersion: async ({ params, headers, query, res }) => ({
        status: 200,
        body: await releases.activate(headers['tenant-id'], params.slug, params.version, query, actor(res)),
      }),
      listReleases: async ({ params, headers, query }) => ({ status: 200, body: await releases.list(headers['tenant-id'], params.slug, query) }),
      verifyReleases: async ({ params, headers, query }) => {
        const head = query.head ? { sequence: Number(query.head.split(':')[0]), hash: query.head.split(':')[1] } : undefined;
        return { status: 200, body: await releases.verify(headers['tenant-id'], params.slug, head) };
      },
      putSplit: async ({ params, headers, body, res }) => ({ status: 200, body: await releases.putSplit(headers['tenant-id'], params.slug, body, actor(res)) }),
      endSplit: async ({ params, headers, query, res }) => ({
        status: 200,
        body: await releases.endSplit(headers['tenant-id'], params.slug, query, actor(res)),
      }),
      promoteSplit: async ({ params, headers, query, res }) => ({
        status: 200,
        body: await releases.promote(headers['tenant-id'], params.slug, query, actor(res)),
      }),
      listAgents: async ({ headers }) => ({ status: 200, body: { data: await agents.list(headers['tenant-id']) } }),
      getAgent: async ({ params, headers }) => ({ status: 200, body: await agents.get(headers['tenant-id'], params.slug) }),
      deleteAgent: async ({ params, headers }) => {
        await agents.archive(headers['tenant-id'], params.slug);
        return { status: 204, body: undefined };
      },
    },
    widget: {
      getWidget: async ({ params, query, req, res }) => {
        const { key } = await widget.admit(widgetRequest(req, res, params.slug, query.key, {}));
        return { status: 200, body: await widget.settings(key, params.slug, query.language) };
      },
      widgetVisitor: async ({ params, query, body, req, res }) => ({
        status: 200,
        body: await widget.visitorToken(widgetRequest(req, res, params.slug, query.key, {}), body.visitor_token),
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
    },
    ops: {
      healthz: () => Promise.resolve({ status: 200 as const, body: { status: 'ok' as const } }),
      metrics: async ({ headers }) => {
        if (opts.metricsToken && !carriesToken(headers.authorization, opts.metricsToken)) {
          throw new UnauthorizedError('This server requires its metrics token: authorization: Bearer <METRICS_TOKEN>');
        }
        return { status: 200, body: await metrics.scrape() };
      },
      readyz: async () => {
        // A replica that is closing tells its load balancer at once, while it still answers.
        if (drain.draining) throw new UnavailableError('The server is shutting down: send new requests to another replica');
        try {
          await ping();
        } catch {
          throw new UnavailableError();
        }
        return { status: 200, body: { status: 'ok' } };
      },
    },
  });
}
