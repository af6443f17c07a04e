// The tenant's privacy policy, on every database and through the typed client: every agent of the
// tenant masks by it (names, addresses, birth dates, the tenant's own patterns, keyed hashes the
// same within a tenant and different across tenants), an agent's own policy overrides it type by
// type, a change reaches another replica within a second, a policy that cannot work is refused
// whole, and a stored one a bug corrupted masks every built-in type rather than none.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import request from 'supertest';
import type { AgentDefinitionInput, PrivacyDef } from '@switchboard/contract';
import { eachDatabase, warnIfPostgresSkipped } from '../helpers/databases.js';
import { appFixture, clientFixture } from '../helpers/fixture.js';
import { testApp } from '../helpers/servers.js';

warnIfPostgresSkipped();

const run = promisify(execFile);

const ACME = { 'tenant-id': 'acme' };
const GLOBEX = { 'tenant-id': 'globex' };

const echo = (privacy?: AgentDefinitionInput['privacy']): AgentDefinitionInput => ({
  name: 'Echo desk',
  ...(privacy ? { privacy } : {}),
  routing: { fallback: 'note' },
  capabilities: [
    { name: 'greet', examples: ['hello', 'hi there', 'good morning', 'hey'], phases: [{ id: 'hi', say: 'Hello!' }] },
    { name: 'note', phases: [{ id: 'noted', say: 'Noted.', end: 'completed' }] },
  ],
});

const policy: PrivacyDef = {
  mask: { email: 'hash', name: 'redact', address: 'redact', birth_date: 'redact', phone: { keep_last: 4 } },
  custom: [{ name: 'member_id', pattern: 'MBR-[0-9]{8}' }],
  phone_regions: ['GB', 'ES', 'DE'],
};

const MESSAGE =
  'My name is Jane Doe, born on 12/03/1985, member MBR-12345678, write to jane.doe@example.com or call +44 20 7946 0958; I live at 221B Baker Street. Order 100001.';

eachDatabase('the tenant privacy policy on $name', (database) => {
  const f = appFixture(database, {
    config: { secretsKey: randomBytes(32) },
    agents: { plain: echo(), keeps: echo({ mask: { email: 'keep' } }) },
  });
  const c = clientFixture(f);
  const api = () => request(f.app.app);

  /** What the conversation keeps of the user's one message. */
  async function kept(slug: string, message: string, tenant = ACME): Promise<string> {
    const r = await api().post(`/api/v1/agents/${slug}/converse`).set(tenant).send({ message }).expect(200);
    const detail = await api().get(`/api/v1/agents/${slug}/conversations/${r.body.conversation_id}`).set(tenant).expect(200);
    return detail.body.turns[0].message as string;
  }

  it('has none until one is set, and an agent without its own then keeps what it is told', async () => {
    const none = await c.sb.api.getPrivacyPolicy();
    expect(none).toMatchObject({ status: 200, body: { policy: null, updated_at: null } });
    expect(await kept('plain', MESSAGE)).toBe(MESSAGE);
  });

  it("masks every agent of the tenant by it: names, addresses, birth dates and the tenant's own patterns", async () => {
    const put = await c.sb.api.putPrivacyPolicy({ body: policy });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ policy });
    const got = await c.sb.api.getPrivacyPolicy();
    expect(got.body).toEqual(put.body);

    const said = await kept('plain', MESSAGE);
    expect(said).toMatch(
      /^My name is \[NAME\], born on \[BIRTH_DATE\], member \[MEMBER_ID\], write to \[EMAIL #[0-9a-f]{10}\] or call \[PHONE …0958\]; I live at \[ADDRESS\]\. Order 100001\.$/,
    );
    // An agent's own policy overrides the tenant's type by type: this one keeps e-mail addresses, and masks the rest.
    const own = await kept('keeps', MESSAGE);
    expect(own).toContain('write to jane.doe@example.com');
    expect(own).toContain('[NAME]');
  });

  it('hashes a value the same way within the tenant, whatever its case, and differently in another tenant', async () => {
    const one = /\[EMAIL #[0-9a-f]{10}\]/.exec(await kept('plain', 'write to jane.doe@example.com'))![0];
    const two = /\[EMAIL #[0-9a-f]{10}\]/.exec(await kept('plain', 'or to Jane.Doe@Example.com please'))![0];
    expect(two).toBe(one);
    await api().put('/api/v1/agents/plain').set(GLOBEX).send(echo()).expect(200);
    await api().put('/api/v1/privacy-policy').set(GLOBEX).send(policy).expect(200);
    const other = /\[EMAIL #[0-9a-f]{10}\]/.exec(await kept('plain', 'write to jane.doe@example.com', GLOBEX))![0];
    expect(other).not.toBe(one);
    // And the turn's audit says what was masked, by type.
    const r = await api().post('/api/v1/agents/plain/converse').set(ACME).send({ message: MESSAGE }).expect(200);
    const timing = (await api().get(`/api/v1/agents/plain/conversations/${r.body.conversation_id}/audit-logs?type=turn_timing`).set(ACME).expect(200)).body
      .data[0];
    expect(timing.data.masked).toEqual({ name: 1, birth_date: 1, member_id: 1, email: 1, phone: 1, address: 1 });
  });

  it('reaches another replica within a second of being set, and of being removed', async () => {
    const other = testApp(f.db, { secretsKey: randomBytes(32) });
    try {
      const viaOther = async () => {
        const r = await request(other.app).post('/api/v1/agents/plain/converse').set(ACME).send({ message: 'I live at 10 Downing Street' }).expect(200);
        return (await request(other.app).get(`/api/v1/agents/plain/conversations/${r.body.conversation_id}`).set(ACME).expect(200)).body.turns[0].message;
      };
      expect(await viaOther()).toBe('I live at [ADDRESS]');
      await c.sb.api.deletePrivacyPolicy();
      expect((await c.sb.api.getPrivacyPolicy()).body).toEqual({ policy: null, updated_at: null });
      // This replica at once; the other once its second is up.
      expect(await kept('plain', 'I live at 10 Downing Street')).toBe('I live at 10 Downing Street');
      await new Promise((r) => setTimeout(r, 1100));
      expect(await viaOther()).toBe('I live at 10 Downing Street');
      // Set again (its revision goes on from the removed one's): the other replica takes the new policy, not the one it held.
      await c.sb.api.putPrivacyPolicy({ body: { mask: { address: 'redact' } } });
      await new Promise((r) => setTimeout(r, 1100));
      expect(await viaOther()).toBe('I live at [ADDRESS]');
    } finally {
      await other.close();
    }
  });

  it('refuses a policy that cannot work, with every problem, and keeps the one before', async () => {
    const before = (await c.sb.api.getPrivacyPolicy()).body;
    const r = await api()
      .put('/api/v1/privacy-policy')
      .set(ACME)
      .send({
        mask: { email: 'redact' },
        custom: [
          { name: 'email', pattern: 'x' },
          { name: 'lookbehind', pattern: '(?<=a)b' },
          { name: 'huge', pattern: '[0-9]{1000}' },
        ],
        phone_regions: ['XX'],
      })
      .expect(400);
    expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual([
      'body.phone_regions[0]',
      'body.custom[0].name',
      'body.custom[1].pattern',
      'body.custom[2].pattern',
    ]);
    expect((await c.sb.api.getPrivacyPolicy()).body).toEqual(before);
    // An agent's own policy is held to the same.
    const agent = await api()
      .put('/api/v1/agents/bad')
      .set(ACME)
      .send(echo({ mask: {}, custom: [{ name: 'sensitive', pattern: 'x' }] }))
      .expect(400);
    expect(agent.body.errors).toContainEqual({ path: 'privacy.custom[0].name', message: '"sensitive" is a built-in type: name the pattern otherwise' });
  });

  it.runIf(database.name === 'sqlite')('is set from a YAML file by the command line, which also tries one here', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'privacy-'));
    const file = join(dir, 'privacy.yaml');
    writeFileSync(file, 'mask:\n  email: redact\n  address: redact\ncustom:\n  - name: member_id\n    pattern: "MBR-[0-9]{8}"\n');
    const cli = ['--import', 'tsx', 'server/src/cli/agents.ts', 'privacy'];
    const set = await run(process.execPath, [...cli, 'set', file, '--url', c.url, '--tenant', 'acme']);
    expect(set.stdout).toContain(`set the tenant's privacy policy from ${file}: email redact, address redact, member_id (pattern) redact`);
    expect((await c.sb.api.getPrivacyPolicy()).body).toMatchObject({
      policy: { mask: { email: 'redact', address: 'redact' }, custom: [{ name: 'member_id', pattern: 'MBR-[0-9]{8}' }] },
    });
    const tried = await run(process.execPath, [...cli, 'try', 'MBR-12345678 lives at 10 Downing Street, a@b.co', '--file', file]);
    expect(tried.stdout).toBe('[MEMBER_ID] lives at [ADDRESS], [EMAIL]\nmasked: member_id 1, address 1, email 1\n');
  });

  it('masks every built-in type when the stored policy is one a bug corrupted', async () => {
    await f.db.knex('tenant_privacy').where({ tenant_id: 'acme' }).update({ policy: '{"mask": {"email": 5}}', revision: 1000 });
    const fresh = testApp(f.db, {});
    try {
      const r = await request(fresh.app).post('/api/v1/agents/plain/converse').set(ACME).send({ message: 'mail jane.doe@example.com' }).expect(200);
      const detail = await request(fresh.app).get(`/api/v1/agents/plain/conversations/${r.body.conversation_id}`).set(ACME).expect(200);
      expect(detail.body.turns[0].message).toBe('mail [EMAIL]');
    } finally {
      await fresh.close();
    }
  });
});
