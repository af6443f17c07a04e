// API keys (AUTH_MODE=api_key): each bound to one tenant, with scopes.
import { z } from 'zod';
import { List, Timestamp } from './common.js';

export const Scope = z.enum(['converse', 'read', 'admin']);
export type Scope = z.infer<typeof Scope>;

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
    scopes: z
      .array(Scope)
      .min(1)
      .optional()
      .describe('converse: send messages; read: conversations, audit, events; admin: all that, and agents, keys, operators, erasure'),
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
  .refine((k) => (k.scopes === undefined) !== (k.widget === undefined), {
    message: 'give either scopes (a secret key) or widget (a publishable key)',
    path: ['scopes'],
  });

export const ApiKey = z.object({
  id: z.string().uuid(),
  name: z.string().nullable(),
  prefix: z.string().describe('The start of the key, to recognise it'),
  scopes: z.array(Scope).describe('Empty for a publishable key'),
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
