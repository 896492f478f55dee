// Source-address allow-lists (CIDR): who may call the portal's surfaces, and which reverse
// proxies the portal and the node agent's ProxyGuard relay believe about the client's address.
import { parseIpAddress, parseIpPrefix, prefixContainsAddress, type IpAddress, type IpPrefix } from './ip-prefix.js';

export class AddressAllowList {
  private readonly prefixes: readonly IpPrefix[];

  constructor(cidrs: readonly string[]) {
    this.prefixes = cidrs.map(parseIpPrefix);
  }

  allows(address: string): boolean {
    const parsed = parseAddress(address);
    return parsed !== null && this.prefixes.some((prefix) => prefixContainsAddress(prefix, parsed));
  }
}

/** Parses a socket address; an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) counts as IPv4. */
function parseAddress(address: string): IpAddress | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  try {
    return parseIpAddress(mapped?.[1] ?? address);
  } catch {
    return null;
  }
}
