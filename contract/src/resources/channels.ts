// Channels: Messaging channels (Slack, Telegram, WhatsApp, SMS) connected with the tenant’s credentials, and the replies sent through them (docs/channels.md). Providers call /hooks/v1/{channel_id}, outside this document.
import { ChannelDeliveriesQuery, ChannelDeliveryPage, ChannelInfo, ChannelList, PatchChannel, PutChannel } from '../channels.js';
import { Problem, TenantHeaders } from '../common.js';
import { initContract } from '@ts-rest/core';
import { ChannelParams, SlugParams, apiOptions, apiResource } from '../resource.js';
import { CONVERSATION, T0, T1 } from '../examples/fixtures.js';

const c = initContract();

export const channels = apiResource({
  tag: 'Channels',
  description:
    'Messaging channels (Slack, Telegram, WhatsApp, SMS) connected with the tenant’s credentials, and the replies sent through them (docs/channels.md). Providers call /hooks/v1/{channel_id}, outside this document.',
  routes: c.router(
    {
      listChannels: {
        method: 'GET',
        path: '/agents/:slug/channels',
        pathParams: SlugParams,
        headers: TenantHeaders,
        responses: { 200: ChannelList.describe("The agent's channels, without credentials") },
        summary: "List an agent's messaging channels",
      },
      putChannel: {
        method: 'PUT',
        path: '/agents/:slug/channels/:channel',
        pathParams: ChannelParams,
        headers: TenantHeaders,
        body: PutChannel,
        responses: {
          200: ChannelInfo.describe('The channel as connected: paste webhook_url into the provider’s settings'),
          409: Problem.describe('SECRETS_KEY is not set on this server, so credentials cannot be stored (`secrets_not_configured`)'),
          502: Problem.describe('set_webhook: Telegram refused or did not answer setWebhook (`channel_setup_failed`); nothing was stored'),
        },
        summary: 'Connect a messaging channel with its credentials (or replace them)',
        description:
          'Credentials are stored encrypted and never returned, logged or audited. A channel of the same kind already connected has its credentials replaced; its webhook URL stays the same.',
      },
      patchChannel: {
        method: 'PATCH',
        path: '/agents/:slug/channels/:channel',
        pathParams: ChannelParams,
        headers: TenantHeaders,
        body: PatchChannel,
        responses: { 200: ChannelInfo },
        summary: 'Pause or resume a channel',
      },
      deleteChannel: {
        method: 'DELETE',
        path: '/agents/:slug/channels/:channel',
        pathParams: ChannelParams,
        headers: TenantHeaders,
        body: c.noBody(),
        responses: { 204: c.noBody() },
        summary: 'Remove a channel: its credentials are forgotten and its webhook URL stops answering',
      },
      listChannelDeliveries: {
        method: 'GET',
        path: '/agents/:slug/channel-deliveries',
        pathParams: SlugParams,
        headers: TenantHeaders,
        query: ChannelDeliveriesQuery,
        responses: { 200: ChannelDeliveryPage.describe('Replies sent out through channels, with every provider call attempted, newest first') },
        summary: "List an agent's channel deliveries and their attempts",
      },
    },
    apiOptions,
  ),
  permissions: {
    listChannels: 'read',
    putChannel: 'channels.manage',
    patchChannel: 'channels.manage',
    deleteChannel: 'channels.manage',
    listChannelDeliveries: 'read',
  },
  examples: {
    ChannelRequest: {
      summary: 'A Slack app’s bot token and signing secret',
      value: {
        credentials: { bot_token: 'xoxb-1234-5678-abcdefghijkl', signing_secret: '8f742231b10e8888abcd99yyyzzz85a5' },
        status: 'active',
        set_webhook: false,
      },
    },
    Channel: {
      summary: 'Connected: paste webhook_url into the Slack app’s Event Subscriptions and Interactivity',
      value: {
        channel: 'slack',
        status: 'active',
        webhook_url: 'https://switchboard.example.com/hooks/v1/ch_Q2hhbm5lbElkRXhhbXBsZV8wMDAwMDAw',
        credentials: ['bot_token', 'signing_secret'],
        webhook_set: null,
        ignored: [],
        created_at: T0,
        updated_at: T0,
      },
    },
    ChannelPaused: { summary: 'Pause a channel', value: { status: 'paused' } },
    ChannelList: {
      summary: 'One channel',
      value: {
        data: [
          {
            channel: 'telegram',
            status: 'active',
            webhook_url: 'https://switchboard.example.com/hooks/v1/ch_VGVsZWdyYW1DaGFubmVsRXhhbXBsZTAwMDA',
            credentials: ['bot_token', 'secret_token'],
            webhook_set: true,
            ignored: [{ at: T0, reason: 'incomplete callback_query' }],
            created_at: T0,
            updated_at: T0,
          },
        ],
      },
    },
    ChannelDeliveryPage: {
      summary: 'A reply sent after one 429',
      value: {
        data: [
          {
            id: '42',
            channel: 'slack',
            conversation_id: CONVERSATION,
            source: 'reply',
            status: 'sent',
            calls: 1,
            calls_done: 1,
            attempts: 2,
            next_attempt_at: null,
            created_at: T1,
            sent_at: '2026-11-24T10:05:45.020Z',
            latency_ms: 2987,
            provider_message_ids: ['1732442745.000200'],
            last_status: 200,
            last_error: null,
            history: [
              { attempt: 1, at: '2026-11-24T10:05:42.051Z', call: 'chat.postMessage', status: 429, error: 'rate limited', duration_ms: 38 },
              { attempt: 2, at: '2026-11-24T10:05:45.002Z', call: 'chat.postMessage', status: 200, error: null, duration_ms: 17 },
            ],
          },
        ],
        next_cursor: null,
      },
    },
  },
  operations: {
    listChannels: { response: ['ChannelList'] },
    putChannel: { request: ['ChannelRequest'], response: ['Channel'] },
    patchChannel: { request: ['ChannelPaused'], response: ['Channel'] },
    deleteChannel: { response: [] },
    listChannelDeliveries: { response: ['ChannelDeliveryPage'] },
  },
});
