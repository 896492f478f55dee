// Interface addresses with their prefix length (10.43.43.1/24), as `ip` and `wg` print them.
import { formatIpAddress, formatIpPrefix, parseIpAddress, parseIpPrefix, type IpFamily, type IpPrefix } from './ip-prefix.js';

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

/** Canonical text of an address, for comparing what the portal sends with what `ip` reports. */
export function canonicalAddress(address: string): string {
  return formatIpAddress(parseIpAddress(address));
}
