// Who a tunnel's client is when the relay sits behind the site's reverse proxy: the TCP peer is
// then the proxy, and the client's address is in the X-Forwarded-For the proxy sends. That
// header is believed only from the reverse proxies of `ProxyGuard.trustedProxyList`, so a
// client that reaches the relay directly cannot name another address as its own. Pure, so
// every case is pinned by unit tests.
import { z } from 'zod';
import type { AddressAllowList } from '../../net/address-allow-list.js';
import { unmappedIpv4 } from '../../net/cidr.js';
import { isIpAddress } from '../../net/ip-prefix.js';

/** A TCP endpoint: the relay's direct peer, or the client a proxy names. */
export interface TcpOrigin {
  readonly address: string;
  /** 0 when unknown: X-Forwarded-For carries no port. */
  readonly port: number;
}

export interface ForwardedOrigin {
  readonly origin: TcpOrigin;
  /** The entry that ended the walk because it is no IP address; null when none did. */
  readonly malformed: string | null;
}

/**
 * One entry of X-Forwarded-For: an IPv4 or IPv6 address (IPv6 also in brackets, as some proxies
 * write it), an IPv4-mapped one named by its IPv4 address as the relay names a direct peer.
 */
const forwardedAddress = z
  .string()
  .trim()
  .transform((text) => text.replace(/^\[(.*)\]$/, '$1'))
  .refine(isIpAddress)
  .transform(unmappedIpv4);

/** The header as Node hands it over; repeated headers arrive joined with ", " or as a list. */
const forwardedForHeader = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((value) => (Array.isArray(value) ? value.join(',') : value));

/**
 * The client behind `peer`. From a peer outside `trusted`, or without the header: the peer
 * itself. From a trusted proxy: the right-most entry of X-Forwarded-For that is no trusted proxy
 * (each proxy appends the address it saw, so entries left of an untrusted one are whatever the
 * client chose to send), or the left-most entry when every one is trusted. An entry that is no
 * address ends the walk at the proxy that passed it on: its address is all that is known.
 */
export function forwardedOrigin(peer: TcpOrigin, header: unknown, trusted: AddressAllowList): ForwardedOrigin {
  const parsedHeader = forwardedForHeader.safeParse(header);
  if (!trusted.allows(peer.address) || !parsedHeader.success || parsedHeader.data === undefined)
    return { origin: peer, malformed: null };
  let origin = peer;
  const entries = parsedHeader.data.split(',');
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index] ?? '';
    const address = forwardedAddress.safeParse(entry);
    if (!address.success) return { origin, malformed: entry.trim().slice(0, 100) };
    origin = { address: address.data, port: 0 };
    if (!trusted.allows(address.data)) break;
  }
  return { origin, malformed: null };
}

/** `IP:port`, an IPv6 address in brackets: how WireGuard writes an endpoint. */
export function formatOrigin(origin: TcpOrigin): string {
  return `${origin.address.includes(':') ? `[${origin.address}]` : origin.address}:${origin.port}`;
}
