// The OpenVPN client file of reference §8.3 as the Admin API returns it: without the
// leading comment lines, so it starts with `dev tun`.

/** A profile's OpenVPN settings as one node offers them to clients. */
export interface OpenVpnClientProfile {
  readonly hostName: string;
  readonly udpPortList: readonly number[];
  readonly tcpPortList: readonly number[];
  /** When non-empty, these replace the real ports in client files (NAT, port sharing). */
  readonly exposedUdpPortList: readonly number[];
  readonly exposedTcpPortList: readonly number[];
}

export interface OpenVpnClientCredentials {
  readonly caCertificatePem: string;
  readonly certificatePem: string;
  /** null: the device keeps its key (it brought a CSR); the file has no `<key>` block then. */
  readonly privateKeyPem: string | null;
  readonly tlsCryptKey: string;
}

export class NoOpenVpnPortError extends Error {
  constructor() {
    super('no UDP/TCP port available');
    this.name = 'NoOpenVpnPortError';
  }
}

/** Ports clients may find open where others are blocked; one of them is always offered when configured. */
const SPECIAL_UDP_PORTS: readonly number[] = [53, 443];
const SPECIAL_TCP_PORTS: readonly number[] = [80, 443];

export function renderOpenVpnClientConfig(
  profile: OpenVpnClientProfile,
  credentials: OpenVpnClientCredentials,
  options: { readonly preferTcp: boolean; readonly random: () => number },
): string {
  // Computed first: a profile without ports is an error, not a file without remotes.
  const remotes = clientRemotes(profile, options);
  return [
    'dev tun',
    'client',
    'nobind',
    'remote-cert-tls server',
    'verb 3',
    'server-poll-timeout 10',
    'tls-version-min 1.3',
    'data-ciphers AES-256-GCM:CHACHA20-POLY1305',
    'reneg-sec 0',
    ...inline('ca', credentials.caCertificatePem),
    ...inline('cert', credentials.certificatePem),
    ...(credentials.privateKeyPem === null ? [] : inline('key', credentials.privateKeyPem)),
    ...inline('tls-crypt', credentials.tlsCryptKey),
    ...remotes,
  ].join('\n');
}

/**
 * The `remote` lines: at most two UDP and two TCP ports (one ordinary, one special port
 * each, chosen at random), UDP first unless the client prefers TCP. The client tries them
 * in this order.
 */
export function clientRemotes(
  profile: OpenVpnClientProfile,
  options: { preferTcp: boolean; random: () => number },
): string[] {
  const udpPorts = offeredPorts(
    pick(profile.exposedUdpPortList, profile.udpPortList),
    SPECIAL_UDP_PORTS,
    options.random,
  );
  const tcpPorts = offeredPorts(
    pick(profile.exposedTcpPortList, profile.tcpPortList),
    SPECIAL_TCP_PORTS,
    options.random,
  );
  if (udpPorts.length === 0 && tcpPorts.length === 0) throw new NoOpenVpnPortError();

  const udp = udpPorts.map((port) => `remote ${profile.hostName} ${port} udp`);
  const tcp = tcpPorts.map((port) => `remote ${profile.hostName} ${port} tcp`);
  return options.preferTcp ? [...tcp, ...udp] : [...udp, ...tcp];
}

function pick(exposed: readonly number[], real: readonly number[]): readonly number[] {
  return exposed.length > 0 ? exposed : real;
}

/** One random ordinary port, then one random special port, each only when the list has one. */
function offeredPorts(ports: readonly number[], special: readonly number[], random: () => number): number[] {
  const ordinary = ports.filter((port) => !special.includes(port));
  const specials = ports.filter((port) => special.includes(port));
  return [ordinary, specials].filter((group) => group.length > 0).map((group) => randomElement(group, random));
}

function randomElement(list: readonly number[], random: () => number): number {
  // Clamped, so a random source returning exactly 1 cannot index past the end.
  const port = list[Math.min(list.length - 1, Math.floor(random() * list.length))];
  if (port === undefined) throw new Error('cannot choose from an empty port list');
  return port;
}

function inline(tag: string, content: string): string[] {
  return [`<${tag}>`, content.trim(), `</${tag}>`];
}
