// API keys (AUTH_MODE=api_key): each bound to one tenant, with scopes.
import { z } from 'zod';
import { Timestamp } from './common.js';

export const Scope = z.enum(['converse', 'read', 'admin']);
export type Scope = z.infer<typeof Scope>;

export const CreateKey = z.object({
  name: z.string().trim().min(1).max(100).optional().describe('A label for people'),
  scopes: z.array(Scope).min(1).describe('converse: send messages; read: conversations, audit, events; admin: agents, keys, operators, erasure'),
});

export const ApiKey = z.object({
  id: z.string().uuid(),
  name: z.string().nullable(),
  prefix: z.string().describe('The start of the key, to recognise it'),
  scopes: z.array(Scope),
  created_at: Timestamp,
  revoked_at: Timestamp.nullable(),
});
export type ApiKey = z.infer<typeof ApiKey>;

export const CreatedKey = ApiKey.extend({
  key: z.string().describe('The key itself: shown this once, stored only as a hash'),
}).describe('The new key; its secret is shown only in this response');
