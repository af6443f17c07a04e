// The tenant's privacy policy: what every agent of the tenant masks, unless its own policy says otherwise.
import { z } from 'zod';
import { Timestamp } from './common.js';
import { PrivacyDef } from './definition.js';

export const TenantPrivacy = z
  .object({
    policy: PrivacyDef.nullable().describe('The policy every agent of the tenant starts from; null: none (agents mask only what their own policy says)'),
    updated_at: Timestamp.nullable().describe('When it was last set; null when it never was'),
  })
  .describe("The tenant's privacy policy (docs/privacy.md)");
export type TenantPrivacy = z.infer<typeof TenantPrivacy>;
