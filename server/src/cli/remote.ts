// What the commands that talk to a running server share: the typed client from --url, --tenant
// and --key, and a refused or failed call said in one line with what to do about it.
import { Option, type Command } from 'commander';
import { createSwitchboardClient, type SwitchboardClient } from '@switchboard/client';

export interface RemoteOptions {
  url: string;
  tenant?: string;
  key?: string;
}

/**
 * The options a printed next command needs to reach the same server as this one: --url always,
 * --tenant as given, and --key as a placeholder when one was given (a key is a secret: it is not
 * echoed into the terminal's scrollback).
 */
export function sameServer(o: RemoteOptions): string {
  return [` --url ${o.url}`, o.tenant ? ` --tenant ${o.tenant}` : '', o.key ? ' --key <your key>' : ''].join('');
}

/** Adds --url, --tenant and --key to a command. */
export function remoteOptions(cmd: Command, opts: { urlRequired?: boolean } = {}): Command {
  const url = new Option('--url <url>', "the server's base URL").env('SWITCHBOARD_URL');
  if (opts.urlRequired) url.makeOptionMandatory();
  else url.default('http://127.0.0.1:3000');
  return cmd
    .addOption(url)
    .addOption(new Option('--tenant <tenant>', 'tenant id (header auth mode; an API key names its own)').env('SWITCHBOARD_TENANT'))
    .addOption(new Option('--key <key>', 'API key (api_key auth mode)').env('SWITCHBOARD_KEY'));
}

/** The typed client for the server the options name (`extra`: a fetch of the caller's, as an upload's progress needs). */
export function remoteClient(o: RemoteOptions, extra: { fetch?: typeof fetch } = {}): SwitchboardClient {
  if (!o.tenant && !o.key) throw new Error('say whose agents: --tenant T (header auth) or --key K (api_key auth)');
  return createSwitchboardClient({ baseUrl: o.url, tenantId: o.tenant, apiKey: o.key, ...extra });
}

/** A call's failure in one line: the server's problem, or why the server could not be reached. */
export function describeFailure(o: RemoteOptions, status: number, body: unknown): string {
  const p = (body ?? {}) as { code?: string; detail?: string; errors?: { path: string; message: string }[] };
  const detail = [p.detail ?? `HTTP ${status}`, ...(p.errors ?? []).slice(0, 3).map((e) => `${e.path}: ${e.message}`)].join('; ');
  const hint =
    status === 401
      ? ' (pass an API key with --key)'
      : status === 403
        ? ' (the key lacks the scope: use an admin key)'
        : status === 404
          ? ' (check the slug and --tenant)'
          : '';
  return `${o.url} answered ${status}${p.code ? ` ${p.code}` : ''}: ${detail}${hint}`;
}

/** Runs a call, turning a connection failure into a one-line error that names --url. */
export async function reach<T>(o: RemoteOptions, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const c = (err as { cause?: { code?: string; message?: string } }).cause;
    const cause = c?.code ?? c?.message ?? (err as Error).message;
    throw new Error(`cannot reach ${o.url} (${cause}): is the server running there? (--url)`);
  }
}
