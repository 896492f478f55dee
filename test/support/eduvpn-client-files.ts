// The client files eduVPN 3.4.1 handed out, written here line by line as eduVPN writes them
// (three comment lines, then wg-quick or OpenVPN text, `\n` between lines and none at the
// end), and the client addresses as eduVPN allocates them. Independent of this portal's
// renderers and address pools on purpose: the end-to-end test gives these files to real
// wg-quick and openvpn after the import, and they must be what eduVPN made, not what this
// portal would make.

/** An IPv4 or IPv6 network as `address/length`. */
interface Network {
  readonly family: 4 | 6;
  readonly network: bigint;
  readonly length: number;
}

function parseNetwork(cidr: string): Network {
  const [address = '', length = ''] = cidr.split('/');
  const family = address.includes(':') ? 6 : 4;
  const bits = family === 4 ? 32 : 128;
  const value = family === 4 ? ipv4Value(address) : ipv6Value(address);
  const prefix = Number(length);
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  return { family, network: value & ~hostMask, length: prefix };
}

function ipv4Value(address: string): bigint {
  return address.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6Value(address: string): bigint {
  const [head = '', tail] = address.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.reduce((value: bigint, group: string) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function formatAddress(family: 4 | 6, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join('.');
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => Number((value >> shift) & 0xffffn));
  // The longest run of two or more zero groups becomes "::" (the first of equal runs), as inet_ntop writes it.
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length++;
    if (length > bestLength) [bestStart, bestLength] = [start, length];
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/**
 * The i-th client address pair of a (profile, node) as eduVPN allocates it: IPv4 network + 2 + i
 * (the network's first host is the node's), IPv6 network + 2 + i.
 */
export function eduVpnClientAddresses(
  rangeFour: string,
  rangeSix: string,
  index: number,
): { readonly ipFour: string; readonly ipSix: string } {
  const four = parseNetwork(rangeFour);
  const six = parseNetwork(rangeSix);
  const capacity = 2 ** (32 - four.length) - 3;
  if (index >= capacity) throw new Error(`${rangeFour} holds ${capacity} clients, not ${index + 1}`);
  const offset = BigInt(2 + index);
  return { ipFour: formatAddress(4, four.network + offset), ipSix: formatAddress(6, six.network + offset) };
}

export interface EduVpnFileProfile {
  readonly profileId: string;
  readonly displayName: string;
  readonly hostName: string;
  /** The portal's root URL, for the `# Portal:` line. */
  readonly portalUrl: string;
}

export interface EduVpnWireGuardFile extends EduVpnFileProfile {
  readonly expiresAt: string;
  readonly privateKey: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly rangeFour: string;
  readonly rangeSix: string;
  readonly nodePublicKey: string;
  readonly listenPort: number;
  readonly defaultGateway: boolean;
  readonly routeList: readonly string[];
}

/** The wg-quick file of a portal or Admin API download (it holds the private key eduVPN never stored). */
export function eduVpnWireGuardFile(file: EduVpnWireGuardFile): string {
  const prefixFour = file.rangeFour.split('/')[1];
  const prefixSix = file.rangeSix.split('/')[1];
  const allowedIps = eduVpnAllowedIps(file);
  return [
    ...commentLines(file, file.expiresAt),
    '',
    '[Interface]',
    `PrivateKey = ${file.privateKey}`,
    `Address = ${file.ipFour}/${prefixFour},${file.ipSix}/${prefixSix}`,
    '',
    '[Peer]',
    `PublicKey = ${file.nodePublicKey}`,
    ...(allowedIps === '' ? [] : [`AllowedIPs = ${allowedIps}`]),
    `Endpoint = ${file.hostName}:${file.listenPort}`,
  ].join('\n');
}

/**
 * AllowedIPs: everything with the default gateway, else the routes and the profile's own two
 * networks, sorted by network address (IPv4 and IPv6 mixed, as eduVPN sorts them). Routes that
 * overlap, and excludeRouteList, are not modelled: test profiles do not use them.
 */
function eduVpnAllowedIps(file: EduVpnWireGuardFile): string {
  if (file.defaultGateway) return '0.0.0.0/0,::/0';
  const networks = [...file.routeList, file.rangeFour, file.rangeSix].map(parseNetwork);
  networks.sort((a, b) =>
    a.network !== b.network ? (a.network < b.network ? -1 : 1) : a.length - b.length || a.family - b.family,
  );
  return networks.map((network) => `${formatAddress(network.family, network.network)}/${network.length}`).join(',');
}

export interface EduVpnOpenVpnFile extends EduVpnFileProfile {
  readonly expiresAt: string;
  readonly caCertificatePem: string;
  readonly certificatePem: string;
  readonly privateKeyPem: string;
  readonly tlsCryptKey: string;
  readonly udpPorts: readonly number[];
  readonly tcpPorts: readonly number[];
}

/** UDP's and TCP's "special" ports, which pass most firewalls. */
const SPECIAL_PORTS = { udp: [53, 443], tcp: [80, 443] } as const;

/** The .ovpn file: directives, the inline CA, certificate, key and tls-crypt key, then the remotes. */
export function eduVpnOpenVpnFile(file: EduVpnOpenVpnFile): string {
  return [
    ...commentLines(file, file.expiresAt),
    '',
    'dev tun',
    'client',
    'nobind',
    'remote-cert-tls server',
    'verb 3',
    'server-poll-timeout 10',
    'tls-version-min 1.3',
    'data-ciphers AES-256-GCM:CHACHA20-POLY1305',
    'reneg-sec 0',
    '<ca>',
    file.caCertificatePem.trim(),
    '</ca>',
    '<cert>',
    file.certificatePem.trim(),
    '</cert>',
    '<key>',
    file.privateKeyPem.trim(),
    '</key>',
    '<tls-crypt>',
    file.tlsCryptKey.trim(),
    '</tls-crypt>',
    ...remotePorts(file.udpPorts, 'udp').map((port) => `remote ${file.hostName} ${port} udp`),
    ...remotePorts(file.tcpPorts, 'tcp').map((port) => `remote ${file.hostName} ${port} tcp`),
  ].join('\n');
}

/**
 * Up to two ports of a list: a normal one, then a special one. eduVPN picks each at random;
 * here the first of each is taken, so that a test knows which ports its file names.
 */
function remotePorts(ports: readonly number[], proto: 'udp' | 'tcp'): number[] {
  const special: readonly number[] = SPECIAL_PORTS[proto];
  const normal = ports.find((port) => !special.includes(port));
  const specialPort = ports.find((port) => special.includes(port));
  return [normal, specialPort].filter((port): port is number => port !== undefined);
}

function commentLines(file: EduVpnFileProfile, expiresAt: string): string[] {
  return [
    `# Portal: ${file.portalUrl}`,
    `# Profile: ${file.displayName} (${file.profileId})`,
    `# Expires: ${expiresAt}`,
  ];
}
