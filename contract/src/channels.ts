// Messaging channels: an agent answering in Slack, Telegram, WhatsApp and SMS (Twilio), each
// connected with the tenant's own credentials (docs/channels.md). Credentials are write-only:
// no response ever carries them, only the names of the fields that are set.
import { z } from 'zod';
import { List, Page, Timestamp } from './common.js';

export const CHANNEL_KINDS = ['slack', 'telegram', 'whatsapp', 'sms'] as const;
export const ChannelKind = z.enum(CHANNEL_KINDS).describe('slack, telegram, whatsapp or sms (Twilio)');
export type ChannelKind = z.infer<typeof ChannelKind>;
export const isChannelKind = (v: string): v is ChannelKind => (CHANNEL_KINDS as readonly string[]).includes(v);

const secret = (what: string) => z.string().min(1).max(512).describe(what);

/** The credentials each channel takes: one entry per channel (a fifth channel adds its own). */
export const ChannelCredentials = {
  slack: z
    .object({
      bot_token: secret("The app's bot token (xoxb-…), for chat.postMessage").regex(/^xox[a-z]-[A-Za-z0-9-]+$/, 'must be a Slack token (xoxb-…)'),
      signing_secret: secret("The app's signing secret: every request from Slack is checked against it").regex(
        /^[A-Za-z0-9]{16,128}$/,
        'must be letters and digits',
      ),
    })
    .strict(),
  telegram: z
    .object({
      bot_token: secret('The token @BotFather gave (123456:ABC-…)').regex(/^\d{1,20}:[A-Za-z0-9_-]{20,100}$/, 'must be a bot token such as 123456:ABC-DEF…'),
      secret_token: z
        .string()
        .regex(/^[A-Za-z0-9_-]{16,256}$/, 'must be 16 to 256 characters of A-Z, a-z, 0-9, _ and -')
        .optional()
        .describe('What Telegram sends in X-Telegram-Bot-Api-Secret-Token (setWebhook); one is generated when omitted'),
    })
    .strict(),
  whatsapp: z
    .object({
      access_token: secret('A system user access token with whatsapp_business_messaging'),
      app_secret: secret("The Meta app's secret: X-Hub-Signature-256 is checked against it"),
      phone_number_id: z
        .string()
        .regex(/^\d{1,20}$/, 'must be the numeric phone number id')
        .describe('The business phone number id replies are sent from'),
      verify_token: z
        .string()
        .regex(/^[\x21-\x7e]{8,256}$/, 'must be 8 to 256 printable characters without spaces')
        .describe('What you type as the verify token in the app dashboard (hub.verify_token)'),
    })
    .strict(),
  sms: z
    .object({
      account_sid: z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'must be an account SID (AC…)'),
      auth_token: secret('The auth token: X-Twilio-Signature is checked against it').regex(/^[0-9a-fA-F]{32}$/, 'must be 32 hexadecimal digits'),
      from: z
        .string()
        .regex(/^(\+[1-9]\d{6,14}|MG[0-9a-fA-F]{32})$/, 'must be a number in E.164 form (+15551234567) or a messaging service SID (MG…)')
        .describe('The number (or messaging service) replies are sent from'),
    })
    .strict(),
} as const;

const PutChannelSchema = z
  .object({
    credentials: z
      .record(z.string())
      .describe(
        "This channel's credentials (docs/channels.md): slack {bot_token, signing_secret}; telegram {bot_token, secret_token?}; whatsapp {access_token, app_secret, phone_number_id, verify_token}; sms {account_sid, auth_token, from}",
      ),
    status: z.enum(['active', 'paused']).default('active'),
    set_webhook: z.boolean().default(false).describe('Telegram only: call setWebhook with this channel’s URL and secret token'),
  })
  .strict();
export type PutChannel = z.infer<typeof PutChannelSchema>;
// Named types keep the contract's declaration within what TypeScript serializes (TS7056).
export const PutChannel: z.ZodType<PutChannel, z.ZodTypeDef, z.input<typeof PutChannelSchema>> = PutChannelSchema;

export const PatchChannel = z.object({ status: z.enum(['active', 'paused']) }).strict();

const ChannelInfoSchema = z
  .object({
    channel: ChannelKind,
    status: z.enum(['active', 'paused']).describe('paused: inbound messages are acknowledged and dropped, replies wait'),
    webhook_url: z.string().describe("Paste into the provider's settings: where it sends this channel's messages"),
    credentials: z.array(z.string()).describe('Names of the credential fields that are set (never their values)'),
    webhook_set: z.boolean().nullable().describe('Telegram: whether setWebhook succeeded when asked; null when not asked'),
    ignored: z
      .array(z.object({ at: Timestamp, reason: z.string() }))
      .describe(
        'The last updates the provider sent that were not messages to answer, newest first, with why (a bot’s own message, a status notification, a button press that could not be read): at most 10, each reason noted at most once a minute',
      ),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .describe('A connected channel, without its credentials');
export type ChannelInfo = z.infer<typeof ChannelInfoSchema>;
export const ChannelInfo: z.ZodType<ChannelInfo> = ChannelInfoSchema;

export const ChannelDeliveryStatus = z.enum(['pending', 'sent', 'failed', 'refused']);

const ChannelDeliverySchema = z.object({
  id: z.string(),
  channel: ChannelKind,
  conversation_id: z.string().uuid(),
  source: z.enum(['reply', 'operator']).describe("reply: the agent's answer to a message; operator: a person's reply"),
  status: ChannelDeliveryStatus.describe('refused: the provider will not take it (WhatsApp outside its 24-hour window)'),
  calls: z.number().int().describe('Provider API calls the reply takes (texts split at the provider’s limit, keyboards)'),
  calls_done: z.number().int(),
  attempts: z.number().int(),
  next_attempt_at: Timestamp.nullable(),
  created_at: Timestamp,
  sent_at: Timestamp.nullable(),
  latency_ms: z.number().nullable().describe('From the reply being stored to its last call accepted'),
  provider_message_ids: z.array(z.string()),
  last_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  history: z.array(
    z.object({
      attempt: z.number().int(),
      at: Timestamp,
      call: z.string().describe('The provider method, such as chat.postMessage'),
      status: z.number().int().nullable(),
      error: z.string().nullable(),
      duration_ms: z.number(),
    }),
  ),
});

export type ChannelDelivery = z.infer<typeof ChannelDeliverySchema>;
export const ChannelDelivery: z.ZodType<ChannelDelivery> = ChannelDeliverySchema;

const ChannelDeliveriesQuerySchema = z.object({
  channel: ChannelKind.optional(),
  status: ChannelDeliveryStatus.optional(),
  conversation_id: z.string().uuid().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(500).optional(),
});
export type ChannelDeliveriesQuery = z.infer<typeof ChannelDeliveriesQuerySchema>;
export const ChannelDeliveriesQuery: z.ZodType<
  ChannelDeliveriesQuery,
  z.ZodTypeDef,
  z.input<typeof ChannelDeliveriesQuerySchema>
> = ChannelDeliveriesQuerySchema;

export const ChannelList = List(ChannelInfo);

export const ChannelDeliveryPage = Page(ChannelDelivery);
