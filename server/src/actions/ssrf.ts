// Which addresses an HTTP action may reach: public unicast addresses only. Loopback, private,
// link-local (cloud metadata), shared, multicast, reserved, documentation and translation ranges
// are refused unless the operator allow-lists the host. Ranges are classified by ipaddr.js (its
// IANA special-purpose registry), so a newly listed special range is refused too.
import { lookup, Resolver } from 'node:dns/promises';
import { LRUCache } from 'lru-cache';
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

/** Resolves a name for a call (getaddrinfo by default: /etc/hosts, then DNS). */
export type Lookup = (host: string) => Promise<string[]>;

const systemLookup: Lookup = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** The longest a call's lookup holds its connection slot (the call's own timeout is usually shorter: http-action.ts). */
const LOOKUP_TIMEOUT_MS = 10_000;

/** `p`, or a rejection with `code` after `ms`. */
function withinMs<T>(p: Promise<T>, ms: number, code: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code })), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

class AddressPolicy {
  private readonly allowed: Set<string>;

  constructor(
    allowedHosts: readonly string[],
    private readonly find: Lookup = systemLookup,
  ) {
    this.allowed = new Set(allowedHosts.map((h) => h.toLowerCase().replace(/^\[(.*)\](:\d+)?$/, '$1$2')));
  }

  private isAllowed(host: string, port: string): boolean {
    const h = host.toLowerCase();
    return this.allowed.has(h) || this.allowed.has(`${h}:${port}`);
  }

  /** Whether a connection to `ip`, found for the name `host`, passes the policy. */
  permits(host: string, ip: string, port: string): boolean {
    return !isBlockedAddress(ip) || this.isAllowed(host, port) || this.isAllowed(ip, port);
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
      addresses = isIP(host) ? [host] : await withinMs(this.find(host), LOOKUP_TIMEOUT_MS, 'ETIMEOUT');
    } catch (e) {
      throw new BlockedAddressError(host, `DNS lookup failed: ${(e as { code?: string }).code ?? (e as Error).message}`);
    }
    for (const ip of addresses) {
      if (nameAllowed || this.permits(host, ip, port)) return ip;
    }
    throw new BlockedAddressError(host, `resolves to a private or reserved address (${addresses[0]}) not in ACTION_ALLOWED_HOSTS for this tenant`);
  }
}

/**
 * An HTTP client that connects only where the policy allows: every connection (every redirect
 * hop too) resolves the host, checks the address, and connects to exactly that address.
 */
export function guardedDispatcher(allowedHosts: readonly string[], opts: { maxRedirections?: number; lookup?: Lookup } = {}): Dispatcher {
  const policy = new AddressPolicy(allowedHosts, opts.lookup);
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

/** What a host check found: reachable, not reachable for this tenant, or not checked (and why). */
export type HostCheck = { result: 'reachable' } | { result: 'unreachable' } | { result: 'not_checked'; why: string };

export interface HostCheckerOptions {
  /** How long one name server query may take, and how many are made (c-ares's own timeout and tries). */
  timeoutMs?: number;
  tries?: number;
  /** Lookups under way at once, in the process and for one tenant; past either, a host is not checked. */
  maxLookups?: number;
  maxTenantLookups?: number;
  /** How long an answer (or a name that does not exist) is remembered. */
  cacheMs?: number;
  /** Name servers to ask (host:port); the system's (/etc/resolv.conf) when absent. */
  servers?: string[];
}

/**
 * Checks, ahead of any call, whether hosts that definitions name would pass a tenant's address
 * policy: for warnings at `PUT` and in a version's view. These lookups are made on every `PUT` a
 * tenant sends, so they are bounded: they ask the name servers through c-ares (dns.Resolver, with
 * its own timeout and tries) and never through getaddrinfo, whose calls hold one of libuv's four
 * threads while a name server does not answer (and with them every other tenant's action lookups
 * and file reads); at most `maxLookups` run at once in the process and `maxTenantLookups` for one
 * tenant, a host past either bound being "not checked"; and answers are remembered for
 * `cacheMs`, so repeated definitions do not ask again. A name server that does not answer in time
 * is "not checked" too, never a warning that the host is unreachable. `localhost` names are
 * loopback (RFC 6761); other names in /etc/hosts are not read here (a call still reads them).
 */
export class HostChecker {
  private readonly resolver: Resolver;
  private readonly cache: LRUCache<string, string[] | 'nxdomain'>;
  private readonly lookups = new Map<string, Promise<string[] | 'nxdomain'>>();
  private running = 0;
  private readonly perTenant = new Map<string, number>();
  private readonly maxLookups: number;
  private readonly maxTenantLookups: number;

  constructor(opts: HostCheckerOptions = {}) {
    this.resolver = new Resolver({ timeout: opts.timeoutMs ?? 1500, tries: opts.tries ?? 1 });
    if (opts.servers) this.resolver.setServers(opts.servers);
    this.cache = new LRUCache({ max: 10_000, ttl: opts.cacheMs ?? 60_000 });
    this.maxLookups = opts.maxLookups ?? 16;
    this.maxTenantLookups = opts.maxTenantLookups ?? 4;
  }

  /** Whether a call to `host:port` would pass the address policy of `allowedHosts` (this tenant's grants). */
  async check(tenantId: string, allowedHosts: readonly string[], host: string, port: string): Promise<HostCheck> {
    const policy = new AddressPolicy(allowedHosts);
    const name = host.replace(/^\[|\]$/g, '').toLowerCase();
    if (isIP(name)) return { result: policy.permits(name, name, port) ? 'reachable' : 'unreachable' };
    const addresses = await this.addresses(tenantId, name);
    if (typeof addresses === 'object' && 'why' in addresses) return { result: 'not_checked', why: addresses.why };
    // A name that does not exist fails every call, as an address this tenant may not reach does.
    if (addresses === 'nxdomain' || addresses.length === 0) return { result: 'unreachable' };
    return { result: addresses.some((ip) => policy.permits(name, ip, port)) ? 'reachable' : 'unreachable' };
  }

  private async addresses(tenantId: string, name: string): Promise<string[] | 'nxdomain' | { why: string }> {
    if (name === 'localhost' || name.endsWith('.localhost')) return ['127.0.0.1', '::1'];
    const cached = this.cache.get(name);
    if (cached) return cached;
    let pending = this.lookups.get(name);
    if (!pending) {
      const mine = this.perTenant.get(tenantId) ?? 0;
      if (this.running >= this.maxLookups || mine >= this.maxTenantLookups) {
        return { why: 'too many host checks under way; the host is checked when the agent is next stored' };
      }
      this.running++;
      this.perTenant.set(tenantId, mine + 1);
      pending = this.lookup(name).finally(() => {
        this.running--;
        const left = (this.perTenant.get(tenantId) ?? 1) - 1;
        if (left > 0) this.perTenant.set(tenantId, left);
        else this.perTenant.delete(tenantId);
        this.lookups.delete(name);
      });
      this.lookups.set(name, pending);
    }
    try {
      return await pending;
    } catch (e) {
      return { why: `the name server did not answer (${(e as { code?: string }).code ?? 'error'})` };
    }
  }

  /** A name's IPv4 and IPv6 addresses; 'nxdomain' when it has none; throws when the name servers do not say. */
  private async lookup(name: string): Promise<string[] | 'nxdomain'> {
    const none = new Set(['ENOTFOUND', 'ENODATA']);
    const ask = (p: Promise<string[]>) =>
      p.then(
        (a) => ({ a }),
        (e: unknown) => ({ e: e instanceof Error ? (e as Error & { code?: string }) : Object.assign(new Error(String(e)), { code: undefined }) }),
      );
    const [v4, v6] = await Promise.all([ask(this.resolver.resolve4(name)), ask(this.resolver.resolve6(name))]);
    const found = [...('a' in v4 ? v4.a : []), ...('a' in v6 ? v6.a : [])];
    if (found.length) {
      this.cache.set(name, found);
      return found;
    }
    const failure = [v4, v6].find((r) => 'e' in r && !none.has(r.e.code ?? ''));
    if (failure && 'e' in failure) throw failure.e;
    this.cache.set(name, 'nxdomain');
    return 'nxdomain';
  }
}
