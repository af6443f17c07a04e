// Configuration: grants of secrets and private hosts name their tenants explicitly.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../server/src/config.js';

describe('configuration grants', () => {
  it('grants each operator secret to the tenants its _TENANTS list names, * only when written', () => {
    const c = loadConfig({
      SWITCHBOARD_SECRET_A: 'a-value',
      SWITCHBOARD_SECRET_A_TENANTS: 'acme, beta',
      SWITCHBOARD_SECRET_B: 'b-value',
      SWITCHBOARD_SECRET_B_TENANTS: '*',
      SWITCHBOARD_SECRET_C: 'c-value',
    });
    expect(c.secrets).toEqual({
      A: { value: 'a-value', tenants: ['acme', 'beta'] },
      B: { value: 'b-value', tenants: ['*'] },
      C: { value: 'c-value', tenants: [] },
    });
    expect(() => loadConfig({ SWITCHBOARD_SECRET_A: 'x', SWITCHBOARD_SECRET_A_TENANTS: 'not a tenant!' })).toThrow(ConfigError);
  });

  it('reads ACTION_ALLOWED_HOSTS as TENANT=host entries and refuses entries without a tenant', () => {
    expect(loadConfig({ ACTION_ALLOWED_HOSTS: 'demo=127.0.0.1:3001, *=Hooks.Internal ,demo=10.0.0.5' }).actionAllowedHosts).toEqual({
      demo: ['127.0.0.1:3001', '10.0.0.5'],
      '*': ['hooks.internal'],
    });
    expect(() => loadConfig({ ACTION_ALLOWED_HOSTS: '127.0.0.1:3001' })).toThrow(/names no tenant; write TENANT=127.0.0.1:3001/);
  });

  it('takes a 32-byte SECRETS_KEY as hex or base64 and refuses anything else', () => {
    expect(loadConfig({ SECRETS_KEY: 'ab'.repeat(32) }).secretsKey).toHaveLength(32);
    expect(loadConfig({ SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') }).secretsKey).toHaveLength(32);
    expect(() => loadConfig({ SECRETS_KEY: 'short' })).toThrow(ConfigError);
  });

  it('is frozen all the way down: nothing that holds the configuration can change what another part reads', () => {
    const c = loadConfig({ ACTION_ALLOWED_HOSTS: 'demo=10.0.0.5', SWITCHBOARD_SECRET_A: 'a', SWITCHBOARD_SECRET_A_TENANTS: 'demo' });
    expect(Object.isFrozen(c)).toBe(true);
    for (const inner of [c.training, c.rateLimit, c.retention, c.retention.tenants, c.actionAllowedHosts, c.actionAllowedHosts.demo, c.secrets, c.secrets.A]) {
      expect(Object.isFrozen(inner)).toBe(true);
    }
    expect(() => {
      (c.training as { workers: number }).workers = 64;
    }).toThrow(TypeError);
    expect(c.training.workers).toBe(2);
  });

  it('reads an OpenID provider with its tenant and group roles, and refuses settings that cannot sign anyone in', () => {
    const base = { AUTH_MODE: 'api_key', METRICS_PUBLIC: 'true', OIDC_ISSUER: 'https://login.example.com/realms/acme', OIDC_CLIENT_ID: 'switchboard' };
    expect(
      loadConfig({ ...base, OIDC_TENANT: 'acme', OIDC_GROUP_ROLES: 'sb-admins=owner; support=operator:acme-support,billing; support=viewer' }).oidc,
    ).toMatchObject({
      issuer: base.OIDC_ISSUER,
      tenant: 'acme',
      tenantClaim: null,
      scopes: 'openid email profile',
      groupRoles: { 'sb-admins': [{ role: 'owner' }], support: [{ role: 'operator', agents: ['acme-support', 'billing'] }, { role: 'viewer' }] },
    });
    expect(loadConfig({}).oidc).toBeNull();
    expect(() => loadConfig({ ...base })).toThrow(/OIDC_TENANT or OIDC_TENANT_CLAIM: give one/);
    expect(() => loadConfig({ ...base, OIDC_TENANT: 'acme', OIDC_TENANT_CLAIM: 'tenant' })).toThrow(/give one/);
    expect(() => loadConfig({ ...base, OIDC_TENANT: 'acme', AUTH_MODE: 'header' })).toThrow(/AUTH_MODE: must be api_key with OIDC_ISSUER/);
    expect(() => loadConfig({ ...base, OIDC_CLIENT_ID: undefined, OIDC_TENANT: 'acme' })).toThrow(/OIDC_CLIENT_ID: required/);
    expect(() => loadConfig({ ...base, OIDC_TENANT: 'acme', OIDC_GROUP_ROLES: 'sb-admins=superuser' })).toThrow(/OIDC_GROUP_ROLES: "sb-admins=superuser"/);
    expect(() => loadConfig({ ...base, OIDC_TENANT: 'acme', OIDC_SCOPES: 'email profile' })).toThrow(/OIDC_SCOPES: must include openid/);
  });
});
