// Addresses a webhook must not be sent to unless an administrator allows it: loopback,
// link-local (cloud metadata services live at 169.254.169.254), private (RFC 1918, ULA),
// shared (CGNAT), unspecified, multicast and other ranges that are not the public Internet.
// A request the portal makes on an administrator's behalf must not become a way into the
// portal's own host or network (server-side request forgery).
import { formatIpPrefix, parseIpAddress, parseIpPrefix, prefixContainsAddress, type IpAddress, type IpPrefix } from './ip-prefix.js';

const RANGES: readonly { readonly prefix: IpPrefix; readonly name: string }[] = [
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private (RFC 1918)'],
  ['100.64.0.0/10', 'shared address space (CGNAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private (RFC 1918)'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.168.0.0/16', 'private (RFC 1918)'],
  ['198.18.0.0/15', 'benchmarking (not on the Internet)'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['100::/64', 'discard-only'],
  ['fc00::/7', 'unique local (ULA)'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local'],
  ['ff00::/8', 'multicast'],
].map(([prefix = '', name = '']) => ({ prefix: parseIpPrefix(prefix), name }));

/** IPv6 forms that carry an IPv4 address in their last 32 bits: IPv4-mapped and NAT64. */
const EMBEDDING_IPV4 = ['::ffff:0:0/96', '64:ff9b::/96'].map(parseIpPrefix);

/**
 * The kind of range `address` lies in and the range (`loopback (127.0.0.0/8)`), or null for an
 * address on the public Internet. An IPv6 address that embeds an IPv4 one is judged by it.
 */
export function specialRangeOf(address: string): string | null {
  let parsed: IpAddress;
  try {
    parsed = parseIpAddress(address);
  } catch {
    return 'not an IP address';
  }
  if (parsed.family === 6 && EMBEDDING_IPV4.some((prefix) => prefixContainsAddress(prefix, parsed))) {
    parsed = { family: 4, value: parsed.value & 0xffffffffn };
  }
  const range = RANGES.find((candidate) => prefixContainsAddress(candidate.prefix, parsed));
  return range === undefined ? null : `${range.name} (${formatIpPrefix(range.prefix)})`;
}
