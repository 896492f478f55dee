// What a profile can hand out, in the server's order of preference (reference §5.3): the
// negotiation in protocol-selection.ts filters and orders this list by the client's Accept.
import type { Profile, WireGuardSettings } from '../../config/portal-config.js';
import type { OfferedFormat } from './protocol-selection.js';

/**
 * OpenVPN (one file holds its UDP and TCP remotes; it counts as TCP for `prefer_tcp` when the
 * profile has TCP ports); WireGuard over UDP unless `onlyProxy`; WireGuard over TCP with
 * `enableProxy`; the Apple profile whenever WireGuard over UDP is offered, since it carries
 * the UDP file (the WireGuard app has no ProxyGuard). `preferredProto` decides whether the
 * OpenVPN entry comes before or after the WireGuard ones.
 */
export function offeredFormats(profile: Profile, wireGuard: WireGuardSettings): OfferedFormat[] {
  const openVpn: OfferedFormat[] = [];
  if (profile.openVpn !== null) {
    const tcpPorts =
      profile.openVpn.exposedTcpPortList.length > 0 ? profile.openVpn.exposedTcpPortList : profile.openVpn.tcpPortList;
    openVpn.push({ format: 'openvpn', tcp: tcpPorts.length > 0 });
  }
  const wireGuardFormats: OfferedFormat[] = [];
  if (profile.wireGuard !== null) {
    const udp = !(wireGuard.proxy.enabled && wireGuard.proxy.only);
    if (udp) wireGuardFormats.push({ format: 'wireguard', tcp: false });
    if (wireGuard.proxy.enabled) wireGuardFormats.push({ format: 'wireguard+tcp', tcp: true });
    if (udp) wireGuardFormats.push({ format: 'apple', tcp: false });
  }
  return profile.preferredProto === 'openvpn' ? [...openVpn, ...wireGuardFormats] : [...wireGuardFormats, ...openVpn];
}
