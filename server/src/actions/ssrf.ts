// Which addresses an HTTP action may reach. Loopback, private, link-local, shared, multicast,
// reserved and cloud-metadata ranges are refused unless the operator allow-lists the host.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { Agent, buildConnector, interceptors, type Dispatcher } from 'undici';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible addresses (::a.b.c.d)
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2001::', 32], // Teredo: tunnels to an IPv4 address
  ['2002::', 16], // 6to4: embeds an IPv4 address
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

/** True for an address no action may reach without an allow-list entry. */
export function isBlockedAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) return blocked.check(mapped[1], 'ipv4');
    const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
    if (hex) {
      const hi = parseInt(hex[1], 16);
      const lo = parseInt(hex[2], 16);
      return blocked.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, 'ipv4');
    }
    return blocked.check(ip, 'ipv6');
  }
  return true;
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
