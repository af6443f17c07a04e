// Typed Switchboard client, built on the contract: every call's inputs and responses are typed.
//
//   const sb = createSwitchboardClient({ baseUrl: 'http://127.0.0.1:3000', tenantId: 'demo' });
//   const r = await sb.api.converse({ params: { slug: 'acme-support' }, body: { message: 'hi' } });
//   if (r.status === 200) console.log(r.body.response.message);
import { initClient, type InitClientArgs } from '@ts-rest/core';
import { contract } from '@switchboard/contract';

export * from '@switchboard/contract';

export interface SwitchboardClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** Sent as `tenant-id` on every call. */
  tenantId: string;
  /** Sent as `authorization: Bearer <key>` when the server runs with AUTH_MODE=api_key. */
  apiKey?: string;
  /** Sent as `user-id`, the fallback end-user id. */
  userId?: string;
  /** Extra headers for every call. */
  headers?: Record<string, string>;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof fetch;
}

export function createSwitchboardClient(opts: SwitchboardClientOptions) {
  const baseHeaders: Record<string, string> = { 'tenant-id': opts.tenantId, ...(opts.headers ?? {}) };
  if (opts.apiKey) baseHeaders.authorization = `Bearer ${opts.apiKey}`;
  if (opts.userId) baseHeaders['user-id'] = opts.userId;
  const args = {
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    baseHeaders: baseHeaders as { 'tenant-id': string },
    throwOnUnknownStatus: true,
    ...(opts.fetch
      ? {
          api: async (a: { path: string; method: string; headers: Record<string, string>; body?: RequestInit['body'] }) => {
            const res = await opts.fetch!(a.path, { method: a.method, headers: a.headers, body: a.body });
            const text = await res.text();
            return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
          },
        }
      : {}),
  } satisfies InitClientArgs;
  return initClient(contract, args);
}

export type SwitchboardClient = ReturnType<typeof createSwitchboardClient>;
