// Two ways to call the API with the same test suite: supertest against the app, and the typed
// client against a listening server.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createSwitchboardClient } from '../../client/src/index.js';
import type { App } from '../../server/src/app.js';

export interface Res {
  status: number;
  body: any;
  headers: Record<string, string>;
}

type H = Record<string, string>;

export interface Driver {
  converse(slug: string, body: unknown, headers?: H): Promise<Res>;
  list(slug: string, query?: Record<string, string | number>, headers?: H): Promise<Res>;
  get(slug: string, id: string, headers?: H): Promise<Res>;
  history(slug: string, id: string, headers?: H): Promise<Res>;
  audit(slug: string, id: string, query?: Record<string, string | number>, headers?: H): Promise<Res>;
  putAgent(slug: string, definition: unknown, headers?: H): Promise<Res>;
  getAgent(slug: string, headers?: H): Promise<Res>;
  listAgents(headers?: H): Promise<Res>;
  deleteAgent(slug: string, headers?: H): Promise<Res>;
  close(): Promise<void>;
}

const TENANT = 'acme';

const withTenant = (h: H = {}): H => ('tenant-id' in h ? h : { 'tenant-id': TENANT, ...h });

export function supertestDriver(app: App): Driver {
  const r = request(app.app);
  const done = (p: request.Test): Promise<Res> => p.then((x) => ({ status: x.status, body: x.body, headers: x.headers as H }));
  const base = '/api/v1/agents';
  return {
    converse: (slug, body, h) =>
      done(
        r
          .post(`${base}/${slug}/converse`)
          .set(withTenant(h))
          .send(body as object),
      ),
    list: (slug, q = {}, h) => done(r.get(`${base}/${slug}/conversations`).query(q).set(withTenant(h))),
    get: (slug, id, h) => done(r.get(`${base}/${slug}/conversations/${id}`).set(withTenant(h))),
    history: (slug, id, h) => done(r.get(`${base}/${slug}/conversations/${id}/history`).set(withTenant(h))),
    audit: (slug, id, q = {}, h) => done(r.get(`${base}/${slug}/conversations/${id}/audit-logs`).query(q).set(withTenant(h))),
    putAgent: (slug, def, h) =>
      done(
        r
          .put(`${base}/${slug}`)
          .set(withTenant(h))
          .send(def as object),
      ),
    getAgent: (slug, h) => done(r.get(`${base}/${slug}`).set(withTenant(h))),
    listAgents: (h) => done(r.get(base).set(withTenant(h))),
    deleteAgent: (slug, h) => done(r.delete(`${base}/${slug}`).set(withTenant(h))),
    close: async () => {},
  };
}

export async function clientDriver(app: App): Promise<Driver> {
  const server: Server = app.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = (h: H = {}) => {
    const { 'tenant-id': tenantId = TENANT, ...rest } = h;
    return createSwitchboardClient({ baseUrl, tenantId, headers: rest }).api;
  };
  const done = async (p: Promise<{ status: number; body: unknown; headers: Headers }>): Promise<Res> => {
    const x = await p;
    return { status: x.status, body: x.body, headers: Object.fromEntries(x.headers.entries()) };
  };
  const q = (o: Record<string, string | number>) => o as any;
  return {
    converse: (slug, body, h) => done(client(h).converse({ params: { slug }, body: body as any })),
    list: (slug, query = {}, h) => done(client(h).listConversations({ params: { slug }, query: q(query) })),
    get: (slug, id, h) => done(client(h).getConversation({ params: { slug, id } })),
    history: (slug, id, h) => done(client(h).getHistory({ params: { slug, id } })),
    audit: (slug, id, query = {}, h) => done(client(h).getAuditLogs({ params: { slug, id }, query: q(query) })),
    putAgent: (slug, def, h) => done(client(h).putAgent({ params: { slug }, body: def as any })),
    getAgent: (slug, h) => done(client(h).getAgent({ params: { slug } })),
    listAgents: (h) => done(client(h).listAgents()),
    deleteAgent: (slug, h) => done(client(h).deleteAgent({ params: { slug } })),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
