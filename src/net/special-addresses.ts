// Addresses a webhook must not be sent to unless an administrator allows it: loopback,
// link-local (cloud metadata services live at 169.254.169.254), private (RFC 1918, ULA),
// shared (CGNAT), unspecified, multicast and other ranges that are not the public Internet.
// A request the portal makes on an administrator's behalf must not become a way into the
// portal's own host or network (server-side request forgery). IPv6 forms that carry an IPv4
// address (mapped, compatible, NAT64, 6to4, Teredo) reach it, so it is judged as well.
import { formatIpPrefix, parseIpPrefix, prefixContainsAddress, type IpAddress, type IpPrefix } from './ip-prefix.js';

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

/** Where an IPv6 form carries IPv4 addresses: as the bit offsets (from the left) of its octets. */
const EMBEDDING_IPV4: readonly {
  readonly prefix: IpPrefix;
  readonly octetsAt: readonly (readonly number[])[];
  readonly inverted?: true;
}[] = [
  // IPv4-mapped and IPv4-compatible (deprecated, RFC 4291): the last 32 bits. `::` and `::1`
  // are judged as themselves first.
  { prefix: parseIpPrefix('::ffff:0:0/96'), octetsAt: [[96, 104, 112, 120]] },
  { prefix: parseIpPrefix('::/96'), octetsAt: [[96, 104, 112, 120]] },
  // NAT64 (RFC 6052): the well-known /96, and the local-use /48 (RFC 8215), whose layout skips
  // the u-octet at bits 64–71.
  { prefix: parseIpPrefix('64:ff9b::/96'), octetsAt: [[96, 104, 112, 120]] },
  { prefix: parseIpPrefix('64:ff9b:1::/48'), octetsAt: [[48, 56, 72, 80]] },
  // 6to4 (RFC 3056): bits 16–47.
  { prefix: parseIpPrefix('2002::/16'), octetsAt: [[16, 24, 32, 40]] },
];
/** Teredo (RFC 4380): the server's address in bits 32–63, the client's inverted in the last 32. */
const TEREDO = parseIpPrefix('2001::/32');

/**
 * The IPv4 addresses an IPv6 address carries (IPv4-mapped and -compatible, NAT64, 6to4, Teredo
 * server and client), to be judged as themselves; none for an IPv4 address or another IPv6 one.
 */
export function embeddedIpv4Addresses(address: IpAddress): IpAddress[] {
  if (address.family !== 6) return [];
  const octet = (offset: number): bigint => (address.value >> BigInt(120 - offset)) & 0xffn;
  const ipv4 = (offsets: readonly number[]): IpAddress => ({
    family: 4,
    value: offsets.reduce((value, offset) => (value << 8n) | octet(offset), 0n),
  });
  if (prefixContainsAddress(TEREDO, address)) {
    const client = ipv4([96, 104, 112, 120]);
    return [ipv4([32, 40, 48, 56]), { family: 4, value: client.value ^ 0xffffffffn }];
  }
  const form = EMBEDDING_IPV4.find((candidate) => prefixContainsAddress(candidate.prefix, address));
  return form === undefined ? [] : form.octetsAt.map(ipv4);
}

/** The kind of range `address` itself lies in and the range (`loopback (127.0.0.0/8)`), or null; embedded addresses aside. */
export function ownSpecialRangeOf(address: IpAddress): string | null {
  const range = RANGES.find((candidate) => prefixContainsAddress(candidate.prefix, address));
  return range === undefined ? null : `${range.name} (${formatIpPrefix(range.prefix)})`;
}
