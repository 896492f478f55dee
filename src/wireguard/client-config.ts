// The wg-quick client file of reference §6.3 (and its WireGuard+TCP variant, §7.1),
// as the Admin API returns it: without the leading comment lines, and (unlike the reference)
// ending in a newline, as a text file does: `cat`, editors and `>>` then behave.

import type { WireGuardKey } from '../shared/ids.js';
import {
  formatIpAddress,
  formatIpPrefix,
  ipAddressFamily,
  parseIpAddress,
  parseIpPrefix,
  prefixContainsAddress,
  type IpFamily,
  type IpPrefix,
} from '../net/ip-prefix.js';
import { allowedIps } from '../net/prefix-list.js';
import { gatewayAddresses } from './address-pool.js';

/** A profile's WireGuard settings, resolved for one node. */
export interface WireGuardClientProfile {
  hostName: string;
  listenPort: number;
  mtu: number | null;
  serverPublicKey: WireGuardKey;
  /** CIDR text of this node's client ranges. */
  rangeFour: string;
  rangeSix: string;
  defaultGateway: boolean;
  dnsServerList: string[];
  dnsSearchDomainList: string[];
  routeList: string[];
  excludeRouteList: string[];
  keepAlive: boolean;
  /**
   * WireGuard over TCP (reference §7.1): when set, the client talks to a local
   * ProxyGuard at `127.0.0.1:51820` which forwards to this URL. null for plain UDP.
   */
  proxyEndpoint: string | null;
}

/**
 * What the `PrivateKey` line holds in a file for a device that keeps its own key (`public_key`
 * of POST /create, enrollment): the device puts its key in its place. wg-quick refuses the
 * file until it has (the placeholder is no Base64 key), so a forgotten step fails loudly.
 */
export const DEVICE_PRIVATE_KEY_PLACEHOLDER = '@DEVICE_PRIVATE_KEY@';

/** One client's own settings. */
export interface WireGuardClientConfiguration {
  /** null: the device holds its key; the file has DEVICE_PRIVATE_KEY_PLACEHOLDER in its place. */
  privateKey: WireGuardKey | null;
  ipFour: string;
  ipSix: string;
}

/** Fixed: the ProxyGuard client listens there, whatever the server's own listen port. */
const PROXYGUARD_LOCAL_ENDPOINT = '127.0.0.1:51820';
/** The only keep-alive interval the reference ever emits. */
const KEEPALIVE_SECONDS = 25;

export function renderWireGuardClientConfig(
  profile: WireGuardClientProfile,
  configuration: WireGuardClientConfiguration,
): string {
  const rangeFour = parseIpPrefix(profile.rangeFour);
  const rangeSix = parseIpPrefix(profile.rangeSix);
  const ipFour = clientAddressIn(configuration.ipFour, rangeFour, 4);
  const ipSix = clientAddressIn(configuration.ipSix, rangeSix, 6);

  const lines: string[] = ['[Interface]'];
  if (profile.mtu !== null) lines.push(`MTU = ${profile.mtu}`);
  lines.push(`PrivateKey = ${configuration.privateKey ?? DEVICE_PRIVATE_KEY_PLACEHOLDER}`);
  lines.push(`Address = ${ipFour}/${rangeFour.length},${ipSix}/${rangeSix.length}`);
  const dns = dnsEntries(profile);
  if (dns.length > 0) lines.push(`DNS = ${dns.join(',')}`);

  lines.push('', '[Peer]', `PublicKey = ${profile.serverPublicKey}`);
  const routes = allowedIps({
    defaultGateway: profile.defaultGateway,
    routeList: profile.routeList,
    excludeRouteList: profile.excludeRouteList,
    clientPrefixes: [profile.rangeFour, profile.rangeSix],
  });
  if (routes.length > 0) lines.push(`AllowedIPs = ${routes.join(',')}`);
  // Keep-alive precedes the endpoint lines in both the UDP and the TCP variant.
  if (profile.keepAlive) lines.push(`PersistentKeepalive = ${KEEPALIVE_SECONDS}`);
  if (profile.proxyEndpoint === null) {
    lines.push(`Endpoint = ${wireGuardEndpoint(profile.hostName, profile.listenPort)}`);
  } else {
    lines.push(`Endpoint = ${PROXYGUARD_LOCAL_ENDPOINT}`, `ProxyEndpoint = ${profile.proxyEndpoint}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * DNS servers are only pushed when all traffic goes through the tunnel or when search
 * domains make the resolver relevant; search domains (de-duplicated) always follow.
 */
function dnsEntries(profile: WireGuardClientProfile): string[] {
  const searchDomains = [...new Set(profile.dnsSearchDomainList)];
  const servers: string[] = [];
  if (profile.defaultGateway || searchDomains.length > 0) {
    const gateway = gatewayAddresses(profile.rangeFour, profile.rangeSix);
    for (const server of profile.dnsServerList) {
      servers.push(server.replaceAll('@GW4@', gateway.ipFour).replaceAll('@GW6@', gateway.ipSix));
    }
  }
  return [...servers, ...searchDomains];
}

/**
 * The UDP endpoint `host:port` as wg-quick reads it: it splits at the last ":", so an IPv6
 * literal needs brackets. Also the Apple profile's `RemoteAddress`.
 */
export function wireGuardEndpoint(hostName: string, port: number): string {
  const host = ipAddressFamily(hostName) === 6 ? `[${hostName}]` : hostName;
  return `${host}:${port}`;
}

/** Canonical text of a client address, refusing one that does not belong to its range (a caller bug). */
function clientAddressIn(text: string, range: IpPrefix, family: IpFamily): string {
  const address = parseIpAddress(text);
  if (address.family !== family || !prefixContainsAddress(range, address)) {
    throw new Error(`client address "${text}" is not inside the profile range ${formatIpPrefix(range)}`);
  }
  return formatIpAddress(address);
}
