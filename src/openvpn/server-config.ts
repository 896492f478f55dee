// The OpenVPN server files of one node (reference §8.4): one OpenVPN process per profile
// port, each serving its own slice of the profile's client ranges on its own tun device.
//
// One deliberate change from the reference: instead of `client-connect`/`client-disconnect`
// hook scripts (and `script-security 2` to allow them) the files say `management-client-auth`,
// so every new client waits until the node agent, connected to the process's management
// socket, lets it in or refuses it (`auth-user-pass-optional` goes with it: the clients have a
// certificate, no password). No scripts run on the node.

import type { OpenVpnProfileSettings, Profile, ProfileNode } from '../config/portal-config.js';
import {
  addressAt,
  formatIpAddress,
  formatIpPrefix,
  type IpPrefix,
  makePrefix,
  parseIpAddress,
  parseIpPrefix,
  splitPrefix,
} from '../net/ip-prefix.js';
import { PrefixList } from '../net/prefix-list.js';

export interface OpenVpnServerProfileInput {
  readonly profile: Profile;
  /** The profile on this node; `node.openVpn` must be set. */
  readonly node: ProfileNode;
  readonly caCertificatePem: string;
  readonly server: { readonly certificatePem: string; readonly privateKeyPem: string };
  readonly tlsCryptKey: string;
}

/** The node's own settings (reference §11.1, node `config.php`). */
export interface OpenVpnServerNodeSettings {
  readonly vpnUser: string;
  readonly vpnGroup: string;
  /** The CPU has AES instructions: offer AES-GCM first, else ChaCha20-Poly1305. */
  readonly preferAes: boolean;
  /** Where the management sockets live (the reference: /run/openvpn-server). */
  readonly managementDir: string;
}

export interface OpenVpnServerFile {
  /** `<profileId>-<processNumber>.conf` */
  readonly name: string;
  readonly profileId: string;
  readonly processNumber: number;
  readonly proto: 'udp' | 'tcp';
  readonly port: number;
  readonly content: string;
}

/** The process counts the ranges can be split by (reference §2.1). */
const PROCESS_COUNTS: readonly number[] = [1, 2, 4, 8, 16, 32, 64];
/** Every process gets one /112 of the IPv6 range, whatever the range's size. */
const IPV6_PROCESS_PREFIX_LENGTH = 112;
/** `topology subnet` needs at least a /29 per process. */
const LONGEST_IPV4_PROCESS_PREFIX = 29;

export function renderOpenVpnServerFiles(
  profiles: readonly OpenVpnServerProfileInput[],
  settings: OpenVpnServerNodeSettings,
): OpenVpnServerFile[] {
  const files: OpenVpnServerFile[] = [];
  // tun devices are numbered across all profiles of the node, so none is used twice.
  let tunNumber = 0;
  for (const input of profiles) {
    const { profile, node } = input;
    if (profile.openVpn === null || node.openVpn === null) {
      throw new Error(`profile "${profile.profileId}" has no OpenVPN on node ${node.nodeNumber}`);
    }
    const ports = [
      ...profile.openVpn.udpPortList.map((port) => ({ proto: 'udp' as const, port })),
      ...profile.openVpn.tcpPortList.map((port) => ({ proto: 'tcp' as const, port })),
    ];
    const ranges = processRanges(node.openVpn.rangeFour, node.openVpn.rangeSix, ports.length);
    const openVpn = { ...profile.openVpn, listenOn: node.openVpn.listenOn };
    ports.forEach(({ proto, port }, processNumber) => {
      const range = ranges[processNumber];
      if (range === undefined) throw new Error(`no range for process ${processNumber}`);
      files.push({
        name: `${profile.profileId}-${processNumber}.conf`,
        profileId: profile.profileId,
        processNumber,
        proto,
        port,
        content: renderProcess(input, openVpn, settings, { processNumber, tunNumber, proto, port, ...range }),
      });
      tunNumber += 1;
    });
  }
  return files;
}

/**
 * The client ranges of each process: the IPv4 range cut into `processCount` equal parts, and
 * `processCount` consecutive /112 networks from the start of the IPv6 range.
 */
export function processRanges(
  rangeFour: string,
  rangeSix: string,
  processCount: number,
): { rangeFour: string; rangeSix: string }[] {
  if (!PROCESS_COUNTS.includes(processCount)) {
    throw new Error(
      `an OpenVPN profile needs 1, 2, 4, 8, 16, 32 or 64 ports in total (UDP and TCP), not ${processCount}`,
    );
  }
  const four = parseIpPrefix(rangeFour);
  const six = parseIpPrefix(rangeSix);
  if (four.family !== 4) throw new Error(`OpenVPN IPv4 range "${rangeFour}" is not an IPv4 prefix`);
  if (six.family !== 6) throw new Error(`OpenVPN IPv6 range "${rangeSix}" is not an IPv6 prefix`);

  const extraBits = Math.log2(processCount);
  if (four.length + extraBits > LONGEST_IPV4_PROCESS_PREFIX) {
    throw new Error(
      `OpenVPN IPv4 range ${rangeFour} is too small for ${processCount} processes: each needs at least a /${LONGEST_IPV4_PROCESS_PREFIX}`,
    );
  }
  if (six.length + extraBits > IPV6_PROCESS_PREFIX_LENGTH) {
    throw new Error(
      `OpenVPN IPv6 range ${rangeSix} is too small for ${processCount} processes: each needs a /${IPV6_PROCESS_PREFIX_LENGTH}`,
    );
  }
  const fourParts = splitPrefix(four, processCount);
  const sixStep = 1n << BigInt(128 - IPV6_PROCESS_PREFIX_LENGTH);
  return fourParts.map((part, index) => ({
    rangeFour: formatIpPrefix(part),
    rangeSix: formatIpPrefix(makePrefix(6, six.network + sixStep * BigInt(index), IPV6_PROCESS_PREFIX_LENGTH)),
  }));
}

interface ProcessSettings {
  readonly processNumber: number;
  readonly tunNumber: number;
  readonly proto: 'udp' | 'tcp';
  readonly port: number;
  readonly rangeFour: string;
  readonly rangeSix: string;
}

function renderProcess(
  input: OpenVpnServerProfileInput,
  openVpn: OpenVpnProfileSettings & { readonly listenOn: string },
  settings: OpenVpnServerNodeSettings,
  proc: ProcessSettings,
): string {
  const { profile } = input;
  const four = parseIpPrefix(proc.rangeFour);
  const six = parseIpPrefix(proc.rangeSix);
  const listenAddress = parseIpAddress(openVpn.listenOn);
  const anyAddress = listenAddress.family === 6 && listenAddress.value === 0n;

  const lines = [
    '# OpenVPN Server Config | Automatically Generated | Do NOT modify!',
    'verb 3',
    'dev-type tun',
    `user ${settings.vpnUser}`,
    `group ${settings.vpnGroup}`,
    'topology subnet',
    'persist-key',
    'persist-tun',
    'remote-cert-tls client',
    'dh none',
    'tls-version-min 1.3',
    settings.preferAes ? 'data-ciphers AES-256-GCM:CHACHA20-POLY1305' : 'data-ciphers CHACHA20-POLY1305:AES-256-GCM',
    'reneg-sec 36000',
    'management-client-auth',
    // Without it, management-client-auth makes OpenVPN demand a username and password, which
    // the clients (certificate only, reference §8.3) never send.
    'auth-user-pass-optional',
    // The reference writes the prefix length too; OpenVPN 2.6 accepts it (checked by the tests).
    `server ${formatIpPrefix(four)} ${netmask(four)}`,
    `server-ipv6 ${formatIpPrefix(six)}`,
    // OpenVPN keeps the network, its own address, the last usable and the broadcast address
    // out of the pool; with max-clients at the pool size a full process refuses new clients
    // quickly, and they move on to the next remote.
    `max-clients ${2 ** (32 - four.length) - 4}`,
    'keepalive 10 60',
    `dev tun${proc.tunNumber}`,
    `port ${proc.port}`,
    `management ${settings.managementDir}/${profile.profileId}-${proc.processNumber}.sock unix`,
    `setenv PROFILE_ID ${profile.profileId}`,
    `proto ${protoDirective(proc.proto, listenAddress.family)}`,
    ...inline('ca', input.caCertificatePem),
    ...inline('cert', input.server.certificatePem),
    ...inline('key', input.server.privateKeyPem),
    ...inline('tls-crypt', input.tlsCryptKey),
  ];
  if (!anyAddress) lines.push(`local ${formatIpAddress(listenAddress)}`);
  if (!openVpn.enableLog) lines.push('log /dev/null');
  if (proc.proto === 'tcp') {
    lines.push('tcp-nodelay');
  } else {
    // Clients learn at once when the server restarts, and tell the server when they leave.
    lines.push('explicit-exit-notify 1', 'push "explicit-exit-notify 1"');
  }
  lines.push(...routes(profile, openVpn.blockLan), ...dns(profile, four, six));
  return lines.join('\n');
}

function protoDirective(proto: 'udp' | 'tcp', family: 4 | 6): string {
  if (proto === 'udp') return family === 4 ? 'udp' : 'udp6';
  return family === 4 ? 'tcp-server' : 'tcp6-server';
}

function routes(profile: Profile, blockLan: boolean): string[] {
  const lines: string[] = [];
  const routed = new PrefixList();
  if (profile.defaultGateway) {
    lines.push(`push "redirect-gateway def1 ipv6${blockLan ? ' block-local' : ''}"`);
    // The reference pushes 0.0.0.0/0 as a route too (Windows otherwise reports no Internet
    // connectivity); it also swallows every IPv4 route of routeList.
    routed.add(parseIpPrefix('0.0.0.0/0'));
  }
  for (const route of profile.routeList) routed.add(parseIpPrefix(route));
  for (const prefix of routed.sorted()) lines.push(`push "${routeOption(prefix)}"`);

  const excluded = new PrefixList();
  for (const route of profile.excludeRouteList) excluded.add(parseIpPrefix(route));
  for (const prefix of excluded.sorted()) {
    lines.push(`push "${routeOption(prefix)} ${prefix.family === 4 ? 'net_gateway' : 'net_gateway_ipv6'}"`);
  }
  return lines;
}

function routeOption(prefix: IpPrefix): string {
  return prefix.family === 4
    ? `route ${formatIpAddress({ family: 4, value: prefix.network })} ${netmask(prefix)}`
    : `route-ipv6 ${formatIpPrefix(prefix)}`;
}

/**
 * DNS servers only matter when all traffic goes through the tunnel or search domains point
 * queries at them; `@GW4@`/`@GW6@` stand for this process's own tunnel addresses.
 */
function dns(profile: Profile, four: IpPrefix, six: IpPrefix): string[] {
  const lines: string[] = [];
  const searchDomains = [...new Set(profile.dnsSearchDomainList)];
  if (profile.defaultGateway || searchDomains.length > 0) {
    const gatewayFour = formatIpAddress(addressAt(four, 1));
    const gatewaySix = formatIpAddress(addressAt(six, 1));
    for (const server of profile.dnsServerList) {
      lines.push(`push "dhcp-option DNS ${server.replaceAll('@GW4@', gatewayFour).replaceAll('@GW6@', gatewaySix)}"`);
    }
  }
  // Windows would otherwise keep asking its other resolvers too, leaking queries.
  if (profile.defaultGateway && profile.dnsServerList.length > 0) lines.push('push "block-outside-dns"');
  for (const domain of searchDomains) lines.push(`push "dhcp-option DOMAIN-SEARCH ${domain}"`);
  return lines;
}

function netmask(prefix: IpPrefix): string {
  return formatIpAddress({ family: 4, value: makePrefix(4, 0xffffffffn, prefix.length).network });
}

function inline(tag: string, content: string): string[] {
  return [`<${tag}>`, content.trim(), `</${tag}>`];
}
