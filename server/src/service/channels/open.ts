// A stored channel opened for use: its adapter and its credentials decrypted, and the provider's
// HTTP as the adapter calls it.
import { isChannelKind, type ChannelKind } from '@switchboard/contract';
import type { Logger } from 'pino';
import { request } from 'undici';
import { ADAPTERS } from '../../channels/index.js';
import type { ChannelAdapter, ProviderHttp } from '../../channels/adapter.js';
import type { ChannelRow } from '../../store/channel-store.js';
import { unseal, type Sealed } from '../secrets.js';

/** What a provider's answer may weigh. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A channel with its credentials opened. */
export interface OpenChannel {
  row: ChannelRow;
  kind: ChannelKind;
  adapter: ChannelAdapter;
  creds: Record<string, string>;
}

/** Why a stored channel could not be opened, as its delivery log and inbound record say it. */
export const UNREADABLE = 'channel credentials do not decrypt (SECRETS_KEY changed, or the row was altered)';

/** What sealed credentials are bound to: a sealed value moved to another row or tenant does not open. */
export const binding = (tenantId: string, channelId: string) => Buffer.from(`channel\u0000${tenantId}\u0000${channelId}`);

/** Reads a provider's answer up to MAX_ANSWER_BYTES (more is cut off: no answer of theirs needs it). */
async function providerCall(req: { url: string; headers: Record<string, string>; body: string }, timeoutMs: number) {
  const res = await request(req.url, { method: 'POST', headers: req.headers, body: req.body, signal: AbortSignal.timeout(timeoutMs) });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      res.body.destroy();
      break;
    }
    chunks.push(chunk);
  }
  return { status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') };
}

export class ChannelOpener {
  constructor(
    private readonly opts: { key: Buffer | undefined; apiUrls: Partial<Record<ChannelKind, string>>; timeoutMs: number },
    private readonly logger: Logger,
  ) {}

  /** The provider's API for `kind`: its base URL (CHANNEL_API_URLS or the adapter's default) and a bounded call. */
  http(kind: ChannelKind): ProviderHttp {
    return { base: (this.opts.apiUrls[kind] ?? ADAPTERS[kind].defaultApiUrl).replace(/\/+$/, ''), call: (req) => providerCall(req, this.opts.timeoutMs) };
  }

  /** The channel opened, or null (logged) when its kind is unknown or its credentials do not decrypt. */
  open(row: ChannelRow): OpenChannel | null {
    if (!isChannelKind(row.kind) || !this.opts.key) return null;
    try {
      const creds = JSON.parse(unseal(this.opts.key, binding(row.tenant_id, row.id), JSON.parse(row.credentials) as Sealed)) as Record<string, string>;
      return { row, kind: row.kind, adapter: ADAPTERS[row.kind], creds };
    } catch {
      this.logger.warn({ tenant: row.tenant_id, channel: row.kind }, `stored ${UNREADABLE}`);
      return null;
    }
  }
}
