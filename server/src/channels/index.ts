// The channels the service speaks: one adapter per folder (docs/channels.md, "Adding a channel").
import type { ChannelKind } from '@switchboard/contract';
import type { ChannelAdapter } from './adapter.js';
import { slack } from './slack/adapter.js';
import { sms } from './sms/adapter.js';
import { telegram } from './telegram/adapter.js';
import { whatsapp } from './whatsapp/adapter.js';

export const ADAPTERS: Record<ChannelKind, ChannelAdapter> = {
  slack: slack,
  telegram: telegram,
  whatsapp: whatsapp,
  sms: sms,
};

/** Where each provider's API is, unless the operator points it elsewhere (CHANNEL_API_URLS). */
export const DEFAULT_API_URLS: Record<ChannelKind, string> = {
  slack: 'https://slack.com/api',
  telegram: 'https://api.telegram.org',
  whatsapp: 'https://graph.facebook.com/v21.0',
  sms: 'https://api.twilio.com',
};
