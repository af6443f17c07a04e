// Tenants' own secrets: write-only values that action templates read as `secrets.NAME`.
import { z } from 'zod';
import { List, Timestamp } from './common.js';

export const SecretName = z
  .string()
  .regex(/^[A-Z0-9_]{1,128}$/, 'must match [A-Z0-9_]{1,128}')
  .describe('Secret name, as templates read it: secrets.NAME');

export const PutSecret = z
  .object({
    value: z.string().min(1).max(8192).describe('The secret value; it can never be read back'),
  })
  .strict();

export const SecretInfo = z.object({
  name: z.string(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type SecretInfo = z.infer<typeof SecretInfo>;

export const SecretList = List(SecretInfo);
