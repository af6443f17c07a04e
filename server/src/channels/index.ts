// The channels the service speaks: one adapter per folder (docs/channels.md, "Adding a channel").
// Typed by the contract's ChannelKind: a kind added there and not here does not compile.
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
