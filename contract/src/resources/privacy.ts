// Privacy: the tenant's masking policy, which every agent's own policy overrides type by type
import { PrivacyDef } from '../definition.js';
import { TenantHeaders } from '../common.js';
import { TenantPrivacy } from '../privacy.js';
import { initContract } from '@ts-rest/core';
import { apiOptions, apiResource } from '../resource.js';
import { T0 } from '../examples/fixtures.js';

const c = initContract();

const policy = {
  mask: { email: 'hash', phone: { keep_last: 4 }, card: { keep_last: 4 }, iban: 'redact', name: 'redact', address: 'redact' },
  custom: [{ name: 'member_id', pattern: 'MBR-[0-9]{8}' }],
  phone_regions: ['GB', 'ES'],
} as const;

export const privacy = apiResource({
  tag: 'Privacy',
  description: "The tenant's masking policy, which every agent's own policy overrides type by type (docs/privacy.md)",
  routes: c.router(
    {
      getPrivacyPolicy: {
        method: 'GET',
        path: '/privacy-policy',
        headers: TenantHeaders,
        responses: { 200: TenantPrivacy },
        summary: "The tenant's privacy policy (null when none is set)",
      },
      putPrivacyPolicy: {
        method: 'PUT',
        path: '/privacy-policy',
        headers: TenantHeaders,
        body: PrivacyDef,
        responses: { 200: TenantPrivacy },
        summary: "Set the tenant's privacy policy: every replica masks by it within a second",
        description:
          "Checked as an agent's policy is (phone regions libphonenumber knows, custom patterns within their bounds, `hash` only where the operator has set SECRETS_KEY): a policy that fails is refused with every problem (`validation_error`) and the one before stays.",
      },
      deletePrivacyPolicy: {
        method: 'DELETE',
        path: '/privacy-policy',
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: "Remove the tenant's privacy policy: agents mask only what their own policy says",
      },
    },
    apiOptions,
  ),
  permissions: {
    getPrivacyPolicy: 'read',
    putPrivacyPolicy: 'privacy.manage',
    deletePrivacyPolicy: 'privacy.manage',
  },
  examples: {
    PrivacyPolicyRequest: { summary: 'Mask contact and payment data, hash e-mail addresses for analytics', value: policy },
    PrivacyPolicy: { summary: 'The policy as set', value: { policy, updated_at: T0 } },
    PrivacyPolicyNone: { summary: 'No policy set', value: { policy: null, updated_at: null } },
  },
  operations: {
    getPrivacyPolicy: { response: ['PrivacyPolicy', 'PrivacyPolicyNone'] },
    putPrivacyPolicy: { request: ['PrivacyPolicyRequest'], response: ['PrivacyPolicy'], problems: { 400: ['ValidationError'] } },
    deletePrivacyPolicy: { response: [] },
  },
});
