// Which client an address stands for when the portal counts what clients do (the audit log's
// coalesced refusals): an IPv6 client commonly holds a whole /64 (privacy addresses, SLAAC), so
// its /64 is the client; an IPv4 client is its address, also when written IPv4-mapped.
import { formatIpAddress, formatIpPrefix, ipAddressFamily, makePrefix, parseIpAddress } from './ip-prefix.js';

const IPV4_MAPPED = 0xffffn;

/** `192.0.2.7` for itself and `::ffff:192.0.2.7`; `2001:db8:1:2::/64` for any address in it; anything else (a name) as given. */
export function clientNetwork(address: string): string {
  const family = ipAddressFamily(address);
  if (family === 4) return address;
  if (family === null) return address;
  const { value } = parseIpAddress(address);
  if (value >> 32n === IPV4_MAPPED) return formatIpAddress({ family: 4, value: value & 0xffff_ffffn });
  return formatIpPrefix(makePrefix(6, value, 64));
}
