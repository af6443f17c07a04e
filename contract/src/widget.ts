// The web chat widget's routes (/widget/v1): a page's script talks to one agent with a publishable
// key (`?key=pk_…`, in the URL so that preflights name it too) and a visitor token the service
// signed for it (POST /agents/:slug/visitor). They answer only for the key's agents, on pages of
// the key's origins, and a conversation only to the visitor who started it (docs/widget.md).
import { z } from 'zod';
import { ConversationStatus, Option } from './converse.js';
import { Timestamp } from './common.js';
import { Citation } from './knowledge.js';

export const WidgetQuery = z.object({
  key: z
    .string()
    .regex(/^pk_[0-9a-f]{32}$/, 'must be a publishable key (pk_…)')
    .describe('The publishable key (public by design: it is in the page)'),
});

/** A visitor token as the service signs it: `v1.<visitor id>.<expiry, Unix seconds>.<signature>`. */
export const VisitorToken = z
  .string()
  .regex(/^v1\.[A-Za-z0-9_-]{22}\.\d{10}\.[A-Za-z0-9_-]{43}$/, 'must be a visitor token of POST /widget/v1/agents/{slug}/visitor');

/** A signed-in user's identity, as the site's server signed it (docs/widget.md). */
export const IdentityHeaders = z.object({
  'x-user-id': z.string().min(1).max(256).optional().describe("A signed-in user's id, taken only with a valid x-user-hash"),
  'x-user-hash': z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be 64 hexadecimal digits')
    .optional()
    .describe('HMAC-SHA-256 of x-user-id under WIDGET_IDENTITY_SECRET (docs/widget.md)'),
  'x-request-id': z.string().max(200).optional(),
});

export const VisitorHeaders = IdentityHeaders.extend({
  'x-visitor-token': VisitorToken.describe(
    'The visitor token the service signed for this browser (POST …/visitor): only its visitor may continue or follow its conversations',
  ),
});

export const WidgetSettings = z
  .object({
    agent: z.string().describe("The agent's slug"),
    title: z.string(),
    greeting: z.string().nullable().describe('In the language asked for (`language`), else the first one given'),
    accent: z.string().describe('A colour such as #1f6feb'),
    languages: z.array(z.string()).describe('Languages the visitor may choose among (none: the browser’s)'),
  })
  .describe('How the widget presents the agent');
export type WidgetSettings = z.infer<typeof WidgetSettings>;

export const WidgetSettingsQuery = WidgetQuery.extend({
  language: z
    .string()
    .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/i)
    .optional(),
});

export const WidgetConverseRequest = z.object({
  message: z.string().trim().min(1, 'must not be empty'),
  conversation_id: z.string().uuid().optional().describe('Omit to start a conversation'),
  language: z
    .string()
    .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/i, 'must be a language code such as en or pt-BR')
    .optional()
    .describe("The visitor's language: preferences.language of the conversation"),
  page_url: z.string().url().max(2048).optional().describe('The page (recorded with a new conversation)'),
});

export const WidgetTurn = z.object({
  index: z.number().int().describe('From 0, as turn.created events name it'),
  role: z.enum(['user', 'agent']),
  message: z.string(),
  timestamp: Timestamp,
  options: z.array(Option).optional(),
  author: z.string().optional().describe('Replies of a person (an escalated conversation) name them'),
  citations: z.array(Citation).optional().describe('Answers from knowledge sources: the passages cited, with their links'),
});

export const WidgetConversation = z
  .object({
    conversation_id: z.string().uuid(),
    status: ConversationStatus,
    awaiting_input: z.boolean(),
    turns: z.array(WidgetTurn).describe('Oldest first'),
  })
  .describe("A visitor's conversation as the widget shows it");
export type WidgetConversation = z.infer<typeof WidgetConversation>;

export const VisitorTokenRequest = z
  .object({
    visitor_token: z
      .string()
      .max(200)
      .optional()
      .describe('The token this browser holds, to renew for the same visitor (up to 30 days after it expired); omit, or an unusable one, for a new visitor'),
  })
  .describe('A visitor token asked for: a new visitor, or the renewal of one');

export const VisitorTokenResponse = z
  .object({
    visitor_token: VisitorToken.describe('Send it as x-visitor-token on every other request of the widget'),
    expires_at: Timestamp.describe('Renew it before then (a renewal keeps the visitor and its conversations)'),
    renewed: z.boolean().describe('true: the same visitor as the token sent; false: a new visitor'),
  })
  .describe('A visitor token: bound to the key, signed by the service, expiring');
