// API keys (AUTH_MODE=api_key): each bound to one tenant, with roles (access.ts) or the scopes
// that stand for them.
import { z } from 'zod';
import { Grant, Grants, Scope } from './access.js';
import { List, Timestamp } from './common.js';

/** An origin a web page is served from: scheme, host and port, nothing more. */
export const WebOrigin = z
  .string()
  .max(255)
  .regex(
    // `[/]{2}`, not `\/\/`: the published pattern then has no escaped slash, which some generators
    // copy into a regex literal of their own as `\\/`.
    /^https?:[/]{2}(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*)(:\d{1,5})?$/,
    'must be an origin such as https://shop.example.com (scheme, host, port; no path)',
  )
  .transform((o) => o.toLowerCase());

export const CreateKey = z
  .object({
    name: z.string().trim().min(1).max(100).optional().describe('A label for people'),
    scopes: z.array(Scope).min(1).optional().describe('converse: the client role; read: the viewer role; admin: the owner role (access.ts, docs/people.md)'),
    roles: Grants.optional().describe('The roles the key holds, each for the whole tenant or for named agents (docs/people.md)'),
    widget: z
      .object({
        agents: z
          .array(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be an agent slug'))
          .min(1)
          .max(50)
          .describe('Agents the widget may talk to'),
        origins: z.array(WebOrigin).min(1).max(20).describe('Origins of the pages it may run on'),
      })
      .optional()
      .describe('A publishable key for the web chat widget (docs/widget.md)'),
  })
  .refine((k) => [k.scopes, k.roles, k.widget].filter((x) => x !== undefined).length === 1, {
    message: 'give one of roles or scopes (a secret key) or widget (a publishable key)',
    path: ['roles'],
  });

export const ApiKey = z.object({
  id: z.string().uuid(),
  name: z.string().nullable(),
  prefix: z.string().describe('The start of the key, to recognise it'),
  scopes: z.array(Scope).describe('The scopes the key was created with; empty for a key created with roles and for a publishable key'),
  roles: z.array(Grant).describe('The roles the key holds (its scopes as roles for a key created with scopes); empty for a publishable key'),
  widget: z
    .object({
      agents: z.array(z.string()),
      origins: z.array(z.string()),
      key: z.string().describe('The publishable key itself: public by design, shown in the snippet'),
    })
    .nullable()
    .describe('A publishable key: its agents and allowed origins; null for a secret key'),
  created_at: Timestamp,
  revoked_at: Timestamp.nullable(),
});
export type ApiKey = z.infer<typeof ApiKey>;

export const CreatedKey = ApiKey.extend({
  key: z.string().describe('The key itself: shown this once, stored only as a hash'),
}).describe('The new key; its secret is shown only in this response');

export const KeyList = List(ApiKey);
