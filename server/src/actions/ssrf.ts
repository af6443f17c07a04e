// Which addresses an HTTP action may reach: public unicast addresses only. Loopback, private,
// link-local (cloud metadata), shared, multicast, reserved, documentation and translation ranges
// are refused unless the operator allow-lists the host. Ranges are classified by ipaddr.js (its
// IANA special-purpose registry), so a newly listed special range is refused too.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, interceptors, type Dispatcher } from 'undici';

/** True for an address no action may reach without an allow-list entry. */
export function isBlockedAddress(ip: string): boolean {
  if (!isIP(ip)) return true;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(ip);
  } catch {
    return true;
  }
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    // An IPv4 address inside an IPv6 one (::ffff:a.b.c.d, and the deprecated IPv4-compatible
    // ::a.b.c.d that ipaddr.js counts as unicast) is judged as that IPv4 address.
    if (v6.isIPv4MappedAddress()) return isBlockedAddress(v6.toIPv4Address().toString());
    const parts = v6.parts;
    if (parts.slice(0, 6).every((p) => p === 0)) return true;
  }
  return addr.range() !== 'unicast';
}

/**
 * The host is unknown or not reachable for this tenant. The message is the same in both cases,
 * so that a definition cannot map the operator's network through DNS; `detail` (for the
 * operator's log only) says which.
 */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKED';
  constructor(
    readonly host: string,
    readonly detail: string,
  ) {
    super(`${host} is not reachable from actions (unknown host, or an address this tenant may not reach)`);
  }
}

class AddressPolicy {
  private readonly allowed: Set<string>;

  constructor(allowedHosts: readonly string[]) {
    this.allowed = new Set(allowedHosts.map((h) => h.toLowerCase().replace(/^\[(.*)\](:\d+)?$/, '$1$2')));
  }

  private isAllowed(host: string, port: string): boolean {
    const h = host.toLowerCase();
    return this.allowed.has(h) || this.allowed.has(`${h}:${port}`);
  }

  /**
   * Resolves a host and returns the address to connect to, or throws BlockedAddressError.
   * The caller connects to exactly this address, so a second DNS answer cannot slip past.
   */
  async resolve(hostname: string, port: string): Promise<string> {
    const host = hostname.replace(/^\[|\]$/g, '');
    const nameAllowed = this.isAllowed(host, port);
    let addresses: string[];
    try {
      addresses = isIP(host) ? [host] : (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch (e) {
      throw new BlockedAddressError(host, `DNS lookup failed: ${(e as { code?: string }).code ?? (e as Error).message}`);
    }
    for (const ip of addresses) {
      if (!isBlockedAddress(ip) || nameAllowed || this.isAllowed(ip, port)) return ip;
    }
    throw new BlockedAddressError(host, `resolves to a private or reserved address (${addresses[0]}) not in ACTION_ALLOWED_HOSTS for this tenant`);
  }
}

/**
 * An HTTP client that connects only where the policy allows: every connection (every redirect
 * hop too) resolves the host, checks the address, and connects to exactly that address.
 */
export function guardedDispatcher(allowedHosts: readonly string[], opts: { maxRedirections?: number } = {}): Dispatcher {
  const policy = new AddressPolicy(allowedHosts);
  const base = buildConnector({ timeout: 10_000 });
  const connect: buildConnector.connector = (o, cb) => {
    const port = o.port || (o.protocol === 'https:' ? '443' : '80');
    policy.resolve(o.hostname, port).then(
      (ip) => base({ ...o, hostname: ip, servername: o.servername ?? (o.hostname.startsWith('[') ? undefined : o.hostname) }, cb),
      (err: unknown) => cb(err as Error, null),
    );
  };
  const agent = new Agent({ connect, connections: 64 });
  return opts.maxRedirections ? agent.compose(interceptors.redirect({ maxRedirections: opts.maxRedirections })) : agent;
}

/**
 * The host and port a URL template names, when it names them as plain text (a template in the
 * scheme, host or port leaves them unknown until a call renders it: null).
 */
export function literalHost(template: string): { host: string; port: string; shown: string } | null {
  const m = /^(https?):\/\/([^/?#]*)/i.exec(template.trim());
  if (!m || /[{}%]/.test(m[2])) return null;
  try {
    const u = new URL(`${m[1]}://${m[2]}/`);
    return { host: u.hostname, port: u.port || (u.protocol === 'https:' ? '443' : '80'), shown: u.host };
  } catch {
    return null;
  }
}

/**
 * Whether a call to `host:port` would pass the address policy of these grants: asked ahead of
 * any call (when a definition is stored), with the same rules a call applies. A name that does
 * not resolve within `withinMs` counts as unreachable, as it would for a call.
 */
export async function isReachable(allowedHosts: readonly string[], host: string, port: string, withinMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), withinMs)));
  try {
    return await Promise.race([
      new AddressPolicy(allowedHosts).resolve(host, port).then(
        () => true,
        (e: unknown) => {
          if (e instanceof BlockedAddressError) return false;
          throw e;
        },
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
