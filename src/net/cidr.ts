// Interface addresses with their prefix length (10.43.43.1/24), as `ip` and `wg` print them.
import { isIPv4 } from 'node:net';
import {
  canonicalIPv6,
  formatIpAddress,
  formatIpPrefix,
  ipAddressFamily,
  parseIpAddress,
  parseIpPrefix,
  type IpFamily,
  type IpPrefix,
} from './ip-prefix.js';

/**
 * An address with a prefix length, host bits kept (an interface address such as
 * 10.43.43.1/24), in the canonical text form that `ip` and `wg` print.
 */
export interface Cidr {
  readonly family: IpFamily;
  readonly address: string;
  readonly prefixLength: number;
  readonly text: string;
}

export function parseCidr(text: string): Cidr | null {
  let network: IpPrefix;
  try {
    // Validates the address and the prefix length; the network itself is not kept.
    network = parseIpPrefix(text);
  } catch {
    return null;
  }
  const address = canonicalAddress(text.slice(0, text.indexOf('/')));
  return { family: network.family, address, prefixLength: network.length, text: `${address}/${network.length}` };
}

/** True when the bits after the prefix are all zero, e.g. 10.0.0.2/32 but not 10.0.0.2/24. */
export function isNetworkCidr(cidr: Cidr): boolean {
  return formatIpPrefix(parseIpPrefix(cidr.text)) === cidr.text;
}

/**
 * The canonical text of a network in CIDR notation (parseCidr's, when isNetworkCidr holds), or
 * null for anything else. Single addresses (/32, /128: what every peer gets) take a short way
 * without bigint: a node is given thousands of them at once.
 */
export function canonicalNetworkCidr(text: string): string | null {
  const slash = text.indexOf('/');
  if (slash !== -1) {
    const address = text.slice(0, slash);
    const length = text.slice(slash + 1);
    // isIPv4 accepts only plain dotted quads without leading zeros: already the canonical text.
    if (length === '32' && isIPv4(address)) return text;
    if (length === '128') {
      const canonical = canonicalIPv6(address);
      if (canonical !== null) return `${canonical}/128`;
    }
  }
  const cidr = parseCidr(text);
  return cidr !== null && isNetworkCidr(cidr) ? cidr.text : null;
}

/** Canonical text of an address, for comparing what the portal sends with what `ip` reports. */
export function canonicalAddress(address: string): string {
  return formatIpAddress(parseIpAddress(address));
}

/**
 * An IPv4 address written IPv4-mapped (`::ffff:192.0.2.7`, as a dual-stack socket writes an IPv4
 * peer and a server's log then shows it) as its IPv4 address; any other text unchanged.
 */
export function unmappedIpv4(text: string): string {
  if (ipAddressFamily(text) !== 6) return text;
  const { value } = parseIpAddress(text);
  return value >> 32n === 0xffffn ? formatIpAddress({ family: 4, value: value & 0xffff_ffffn }) : text;
}

/** RFC 6052's well-known NAT64 prefix, 64:ff9b::/96, as the upper 96 bits of an address. */
const NAT64_WELL_KNOWN_PREFIX = 0x0064_ff9b_0000_0000_0000_0000n;

/**
 * An IPv4 address as an IPv6-only host behind NAT64 sees it (`64:ff9b::192.0.2.7`, the
 * well-known prefix) or IPv4-mapped, as its IPv4 address; any other text unchanged. Only the
 * well-known prefix: a network-specific one is the translator's own choice, unknown here.
 */
export function ipv4SeenThroughNat64(text: string): string {
  if (ipAddressFamily(text) !== 6) return text;
  const { value } = parseIpAddress(text);
  return value >> 32n === NAT64_WELL_KNOWN_PREFIX
    ? formatIpAddress({ family: 4, value: value & 0xffff_ffffn })
    : unmappedIpv4(text);
}

/**
 * The canonical text of an IP address (`fd00:0::1` → `fd00::1`), or the text unchanged when it
 * is no address (an empty `ip_six`): how the connection log stores and compares addresses.
 */
export function canonicalAddressOrSame(text: string): string {
  return ipAddressFamily(text) === null ? text : canonicalAddress(text);
}

/**
 * A client's own address as the portal records and announces it: canonical text, and an IPv4
 * client written IPv4-mapped (a relay listening on `::`) as its IPv4 address, the one an abuse
 * report names and a search by address looks for. Any other text unchanged.
 */
export function clientAddressOrSame(text: string): string {
  return canonicalAddressOrSame(unmappedIpv4(text));
}
