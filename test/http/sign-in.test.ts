// People sign in with a real OpenID provider (oidc-provider on loopback, test/helpers/oidc.ts):
// the code flow with PKCE, state and nonce; sessions in HttpOnly cookies with CSRF tokens; roles
// from groups and from owners; and every way a sign-in or a session must fail, changing nothing.
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { echoAgent } from '../helpers/agents.js';
import { eachDatabase } from '../helpers/databases.js';
import { appFixture } from '../helpers/fixture.js';
import { Browser, oidcSettings, startProvider, type TestProvider } from '../helpers/oidc.js';
import { freePort } from '../helpers/servers.js';

/** What these tests read of the answers: problems, identities, lists, sign-outs. */
interface Answer {
  detail: string;
  csrf_token: string;
  end_session_url: string | null;
  data: { slug: string; subject: string; id: string }[];
  roles: unknown[];
}
const json = async (r: Response) => (await r.json()) as Answer;

const ACCOUNTS = {
  ana: { email: 'ana@acme.example', name: 'Ana Owner', groups: ['sb-owners'] },
  bo: { email: 'bo@acme.example', name: 'Bo Reviewer', groups: ['support', 'sb-reviewers'] },
  cy: { email: 'cy@acme.example', name: 'Cy Nobody', groups: ['marketing'] },
  dee: { email: 'dee@acme.example', name: 'Dee Operator', groups: ['sb-alpha-operators'] },
};

eachDatabase('sign-in with an OpenID provider on $name', (database) => {
  let provider: TestProvider;
  let port: number;
  let app: string;
  let server: Server;
  beforeAll(async () => {
    port = await freePort();
    provider = await startProvider(`http://127.0.0.1:${port}/auth/callback`, ACCOUNTS);
  });
  afterAll(() => provider.close());
  const f = appFixture(database, {
    config: () => ({
      authMode: 'api_key',
      publicUrl: `http://127.0.0.1:${port}`,
      oidc: oidcSettings(provider, {
        'sb-owners': [{ role: 'owner' }],
        'sb-reviewers': [{ role: 'reviewer' }],
        'sb-alpha-operators': [{ role: 'operator', agents: ['alpha'] }],
      }),
    }),
  });
  beforeAll(async () => {
    server = f.app.app.listen(port, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', () => r()));
    app = `http://127.0.0.1:${port}`;
    const owner = await f.app.keys.create('acme', { roles: [{ role: 'owner' }] });
    for (const slug of ['alpha', 'beta'])
      await fetch(`${app}/api/v1/agents/${slug}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(echoAgent),
      });
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  /** A browser that signs in as `user`, up to the app's callback (returned, unvisited). */
  const toCallback = async (user: string, browser = new Browser()) => {
    provider.nextUser = user;
    const start = await browser.fetch(`${app}/auth/login?return_to=/console/agents`);
    expect(start.status).toBe(302);
    return { browser, callback: await browser.follow(start.headers.get('location')!, `${app}/auth/callback`) };
  };
  const signIn = async (user: string) => {
    const { browser, callback } = await toCallback(user);
    const done = await browser.fetch(callback);
    return { browser, done };
  };
  const me = async (browser: Browser) => browser.fetch(`${app}/api/v1/me`);
  const sessionCount = async () => Number((await f.db.knex('person_sessions').count({ n: '*' }).first())!.n);

  it('signs a person in by the code flow: an HttpOnly session cookie, roles from their groups, who they are', async () => {
    const { browser, done } = await signIn('ana');
    expect(done.status).toBe(302);
    expect(done.headers.get('location')).toBe('/console/agents');
    const set = done.headers.getSetCookie().find((c) => c.startsWith('sb_session='))!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/SameSite=Lax/i);
    expect(set).toMatch(/Path=\//);
    const res = await me(browser);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({
      tenant_id: 'acme',
      actor: { kind: 'person', issuer: provider.issuer, subject: 'ana', email: 'ana@acme.example' },
      roles: [{ role: 'owner' }],
      csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    // The console asks whether the browser is signed in without meeting a refusal.
    const options = async (b: Browser) => (await b.fetch(`${app}/auth/options`)).json();
    expect(await options(browser)).toEqual({ provider: { issuer: provider.issuer, sign_in_url: '/auth/login' }, signed_in: true });
    expect(await options(new Browser())).toMatchObject({ signed_in: false });
    // The cookie itself is stored nowhere: only its hash.
    const cookie = browser.cookies.get('sb_session')!.value;
    const rows = await f.db.knex('person_sessions').select('*');
    expect(JSON.stringify(rows)).not.toContain(cookie);
    const people = await f.db.knex('people').where({ subject: 'ana' });
    expect(people).toHaveLength(1);
  });

  it('lets a person work within their role, with the CSRF token on every write, and refuses the rest', async () => {
    const { browser } = await signIn('bo');
    const { csrf_token: csrf } = await json(await me(browser));
    expect((await browser.fetch(`${app}/api/v1/agents/alpha/review`)).status).toBe(200);
    // A reviewer may not activate; without the token nothing is even considered.
    const noToken = await browser.fetch(`${app}/api/v1/agents/alpha/versions/1/activate`, { method: 'POST' });
    expect(noToken.status).toBe(403);
    expect((await json(noToken)).detail).toMatch(/CSRF token/);
    const refused = await browser.fetch(`${app}/api/v1/agents/alpha/versions/1/activate`, { method: 'POST', headers: { 'x-csrf-token': csrf } });
    expect(refused.status).toBe(403);
    expect((await json(refused)).detail).toMatch(/"releases.write" permission on agent "alpha"/);
    // A write from another origin is refused although it carries the token.
    const foreign = await browser.fetch(`${app}/api/v1/agents/alpha/review/actions`, {
      method: 'POST',
      headers: { 'x-csrf-token': csrf, origin: 'https://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [], action: 'dismiss' }),
    });
    expect(foreign.status).toBe(403);
    expect((await json(foreign)).detail).toMatch(/another origin/);
  });

  it('records the person who released in the release record, chained, as the CLI and the API show it', async () => {
    const { browser } = await signIn('ana');
    const csrf = (await json(await me(browser))).csrf_token;
    const headers = { 'x-csrf-token': csrf, 'content-type': 'application/json' };
    const draft = await browser.fetch(`${app}/api/v1/agents/alpha?activate=false`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ ...echoAgent, name: 'Echo 2' }),
    });
    expect(draft.status).toBe(200);
    const { stored_version: version } = (await draft.json()) as { stored_version: number };
    expect(version).toBe(2);
    const released = await browser.fetch(`${app}/api/v1/agents/alpha/versions/${version}/activate`, { method: 'POST', headers });
    expect(released.status).toBe(200);
    const steps = (await (await browser.fetch(`${app}/api/v1/agents/alpha/releases`)).json()) as {
      data: { version: number; actor: unknown; key_id: unknown }[];
    };
    expect(steps.data.find((s) => s.version === version)).toMatchObject({
      key_id: null,
      actor: { kind: 'person', issuer: provider.issuer, subject: 'ana', email: 'ana@acme.example' },
    });
    expect(await (await browser.fetch(`${app}/api/v1/agents/alpha/releases/verify`)).json()).toMatchObject({ valid: true });
    // The chain covers the actor: a changed name breaks it.
    const row = await f.db.knex('release_records').where({ tenant_id: 'acme', version }).whereLike('data', '%ana@acme.example%').first();
    await f.db
      .knex('release_records')
      .where({ id: row.id })
      .update({ data: row.data.replace('ana@acme.example', 'eve@acme.example') });
    expect(await (await browser.fetch(`${app}/api/v1/agents/alpha/releases/verify`)).json()).toMatchObject({ valid: false });
    await f.db.knex('release_records').where({ id: row.id }).update({ data: row.data });
  });

  it('names the person who replied and who closed a conversation, in its turns and its chained audit', async () => {
    const ana = await signIn('ana');
    const anaCsrf = (await json(await me(ana.browser))).csrf_token;
    const started = await ana.browser.fetch(`${app}/api/v1/agents/alpha/converse`, {
      method: 'POST',
      headers: { 'x-csrf-token': anaCsrf, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'echo this' }),
    });
    expect(started.status).toBe(200);
    const { conversation_id: id } = (await started.json()) as { conversation_id: string };
    const dee = await signIn('dee');
    const deeCsrf = (await json(await me(dee.browser))).csrf_token;
    const headers = { 'x-csrf-token': deeCsrf, 'content-type': 'application/json' };
    const base = `${app}/api/v1/agents/alpha/conversations/${id}`;
    expect(
      (await dee.browser.fetch(`${base}/messages`, { method: 'POST', headers, body: JSON.stringify({ message: 'Dee here, looking into it.' }) })).status,
    ).toBe(201);
    expect((await dee.browser.fetch(`${base}/status`, { method: 'POST', headers, body: JSON.stringify({ status: 'completed' }) })).status).toBe(200);
    const history = (await (await dee.browser.fetch(`${base}/history`)).json()) as { turns: { message: string; author?: string }[] };
    expect(history.turns.at(-1)).toMatchObject({ message: 'Dee here, looking into it.', author: 'dee@acme.example' });
    const audit = (await (await dee.browser.fetch(`${base}/audit-logs`)).json()) as { data: { type: string; data: Record<string, unknown> }[] };
    const person = { kind: 'person', issuer: provider.issuer, subject: 'dee', email: 'dee@acme.example' };
    expect(audit.data.find((e) => e.type === 'operator_message')?.data).toMatchObject({ author: 'dee@acme.example', actor: person });
    expect(audit.data.find((e) => e.type === 'status_change' && e.data.to === 'completed')?.data).toMatchObject({ reason: 'operator', actor: person });
    expect(await (await dee.browser.fetch(`${base}/audit-logs/verify`)).json()).toMatchObject({ valid: true });
  });

  it("refuses a session on another tenant's data, and an operator of agent A on agent B", async () => {
    const { browser } = await signIn('dee');
    expect((await browser.fetch(`${app}/api/v1/agents/alpha/conversations`)).status).toBe(200);
    expect((await browser.fetch(`${app}/api/v1/agents/beta/conversations`)).status).toBe(403);
    const other = await browser.fetch(`${app}/api/v1/agents`, { headers: { 'tenant-id': 'globex' } });
    expect(other.status).toBe(403);
    expect((await json(other)).detail).toBe('This session belongs to another tenant');
    const listed = await json(await browser.fetch(`${app}/api/v1/agents`));
    expect(listed.data.map((a: { slug: string }) => a.slug)).toEqual(['alpha']);
  });

  it('refuses a person without any role, says how to get one, and keeps no session', async () => {
    const before = await sessionCount();
    const { done } = await signIn('cy');
    expect(done.status).toBe(403);
    expect((await json(done)).detail).toMatch(/hold no role in tenant "acme".*--subject cy/);
    expect(done.headers.getSetCookie().some((c) => c.startsWith('sb_session=') && !c.startsWith('sb_session=;'))).toBe(false);
    expect(await sessionCount()).toBe(before);
  });

  it('refuses a tampered state, a state from another browser, and a replayed code', async () => {
    const before = await sessionCount();
    const { browser, callback } = await toCallback('ana');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
    expect((await browser.fetch(tampered.href)).status).toBe(401);
    // The same callback in a browser that did not start the sign-in.
    const elsewhere = await new Browser().fetch(callback);
    expect(elsewhere.status).toBe(401);
    // Then the right browser, once; its code again fails.
    const second = await toCallback('ana');
    expect((await second.browser.fetch(second.callback)).status).toBe(302);
    const cookie = second.browser.cookies.get('sb_session')!;
    second.browser.cookies.set('sb_login', { value: new URL(second.callback).searchParams.get('state')!, path: '/auth/callback' });
    const replayed = await second.browser.fetch(second.callback);
    expect(replayed.status).toBe(401);
    expect((await json(replayed)).detail).toMatch(/expired or was used already/);
    expect(second.browser.cookies.get('sb_session')).toEqual(cookie);
    expect(await sessionCount()).toBe(before + 1);
  });

  it('refuses an ID token for another audience, an expired one, and one with another nonce', async () => {
    const before = await sessionCount();
    for (const [what, tamper, detail] of [
      ['audience', (c: Record<string, unknown>) => ({ ...c, aud: 'another-client' }), /aud/],
      ['expired', (c: Record<string, unknown>) => ({ ...c, iat: Number(c.iat) - 7200, exp: Number(c.iat) - 3600 }), /exp|expired|timestamp/i],
      ['nonce', (c: Record<string, unknown>) => ({ ...c, nonce: 'another' }), /nonce/],
    ] as const) {
      provider.tamper = tamper;
      try {
        const { done } = await signIn('ana');
        expect(done.status, what).toBe(401);
        expect((await json(done)).detail, what).toMatch(detail);
      } finally {
        provider.tamper = null;
      }
    }
    expect(await sessionCount()).toBe(before);
  });

  it('signs in after the provider rotates its signing key, fetching its keys again', async () => {
    expect((await signIn('ana')).done.status).toBe(302);
    const old = provider.signingKid();
    await provider.rotateKey();
    expect(provider.signingKid()).not.toBe(old);
    // openid-client fetches the provider's keys again for an unknown key at most once a minute.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
    try {
      const { done } = await signIn('ana');
      expect(done.status).toBe(302);
    } finally {
      vi.useRealTimers();
    }
  });

  it('ends sessions when an owner removes a role or ends them, and signs out with the provider too', async () => {
    const owner = await signIn('ana');
    const ownerCsrf = (await json(await me(owner.browser))).csrf_token;
    const operator = await signIn('dee');
    expect((await me(operator.browser)).status).toBe(200);
    const people = await json(await owner.browser.fetch(`${app}/api/v1/people`));
    const dee = people.data.find((p) => p.subject === 'dee')!;
    expect(dee).toMatchObject({ email: 'dee@acme.example', roles: [] });
    const put = await owner.browser.fetch(`${app}/api/v1/people/${dee.id}/roles`, {
      method: 'PUT',
      headers: { 'x-csrf-token': ownerCsrf, 'content-type': 'application/json' },
      body: JSON.stringify({ roles: [{ role: 'viewer', agents: ['beta'] }] }),
    });
    expect(put.status).toBe(200);
    expect((await json(put)).roles).toEqual([{ role: 'viewer', agents: ['beta'] }]);
    // Granted here, on the operator's next request: beta is readable now too.
    expect((await operator.browser.fetch(`${app}/api/v1/agents/beta/conversations`)).status).toBe(200);
    const sessions = await json(await owner.browser.fetch(`${app}/api/v1/people/${dee.id}/sessions`));
    expect(sessions.data.length).toBeGreaterThan(0);
    const ended = await owner.browser.fetch(`${app}/api/v1/people/${dee.id}/sessions`, { method: 'DELETE', headers: { 'x-csrf-token': ownerCsrf } });
    expect(ended.status).toBe(204);
    expect((await me(operator.browser)).status).toBe(401);
    // Sign-out: the session ends here, and the provider's sign-out page is named.
    const out = await owner.browser.fetch(`${app}/auth/logout`, { method: 'POST', headers: { 'x-csrf-token': ownerCsrf } });
    expect(out.status).toBe(200);
    expect((await json(out)).end_session_url).toMatch(new RegExp(`^${provider.issuer}/session/end\\?`));
    expect((await me(owner.browser)).status).toBe(401);
  });

  it('grants a role to a person by their subject, effective on their next request', async () => {
    const bo = await signIn('bo');
    expect((await bo.browser.fetch(`${app}/api/v1/keys`)).status).toBe(403);
    const person = await f.app.people.grant('acme', { issuer: provider.issuer, subject: 'bo' }, [{ role: 'owner' }]);
    expect(person.roles).toEqual([{ role: 'owner' }]);
    expect((await bo.browser.fetch(`${app}/api/v1/keys`)).status).toBe(200);
    await f.app.people.setRoles('acme', person.id, []);
    // Bo's groups still make him a reviewer: the session lives on with that role.
    expect((await bo.browser.fetch(`${app}/api/v1/keys`)).status).toBe(403);
    expect((await bo.browser.fetch(`${app}/api/v1/agents/alpha/review`)).status).toBe(200);
    // A person whose only role was granted here is signed out by their next request once it is
    // taken back, and stays signed out when it is granted again.
    await f.app.people.grant('acme', { issuer: provider.issuer, subject: 'cy' }, [{ role: 'viewer' }]);
    const cy = await signIn('cy');
    expect((await me(cy.browser)).status).toBe(200);
    const cyId = (await f.app.people.list('acme')).find((p) => p.subject === 'cy')!.id;
    await f.app.people.setRoles('acme', cyId, []);
    expect((await me(cy.browser)).status).toBe(401);
    await f.app.people.setRoles('acme', cyId, [{ role: 'viewer' }]);
    expect((await me(cy.browser)).status).toBe(401);
  });
});

describe('sign-in not configured', () => {
  eachDatabase('on $name', (database) => {
    const f = appFixture(database, { config: { authMode: 'api_key' } });
    it('answers 404 at /auth/login, and ignores a session cookie', async () => {
      const { default: request } = await import('supertest');
      const res = await request(f.app.app).get('/auth/login');
      expect(res.status).toBe(404);
      expect((await request(f.app.app).get('/auth/options')).body).toEqual({ provider: null, signed_in: false });
      const api = await request(f.app.app)
        .get('/api/v1/agents')
        .set('cookie', `sb_session=${'A'.repeat(43)}`);
      expect(api.status).toBe(401);
    });
  });
});
