// What a profile can hand out, in the server's order of preference (reference §5.3): the
// negotiation in protocol-selection.ts filters and orders this list by the client's Accept.
import type { Profile, WireGuardSettings } from '../config/portal-config.js';
import type { OfferedFormat } from './protocol-selection.js';

/**
 * WireGuard over UDP unless `onlyProxy`; WireGuard over TCP with `enableProxy`; the Apple
 * profile whenever UDP is offered, since it carries the UDP file (the WireGuard app has no
 * ProxyGuard). A profile without WireGuard ranges offers nothing (OpenVPN is not served).
 */
export function offeredFormats(profile: Profile, wireGuard: WireGuardSettings): OfferedFormat[] {
  if (profile.wireGuard === null) return [];
  const udp = !(wireGuard.proxy.enabled && wireGuard.proxy.only);
  const offered: OfferedFormat[] = [];
  if (udp) offered.push({ format: 'wireguard', tcp: false });
  if (wireGuard.proxy.enabled) offered.push({ format: 'wireguard+tcp', tcp: true });
  if (udp) offered.push({ format: 'apple', tcp: false });
  return offered;
}
