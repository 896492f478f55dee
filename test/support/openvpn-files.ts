// OpenVPN configuration texts for tests: a server file in the shape the portal renders for the
// node agent (management socket + management-client-auth, no client-connect scripts, inline
// keys) and a client file like the portal's client configurations (reference §8.3).
import type { CertificateAndKey, TestPki } from './openvpn-pki.js';

export interface ServerFileSettings {
  readonly profileId: string;
  readonly processNumber: number;
  readonly proto: 'udp' | 'tcp';
  readonly port: number;
  /** Tunnel device inside the node's namespace, e.g. tun0. */
  readonly device: string;
  /** IPv4 network and mask of the `server` directive; the portal writes the prefix length too: ['198.19.10.0/24', '255.255.255.0']. */
  readonly network: readonly [string, string];
  /** `server-ipv6` prefix, e.g. fd00:10::/112. */
  readonly networkSix: string;
  readonly managementDir: string;
  readonly pki: TestPki;
  readonly server: CertificateAndKey;
  /** Further directives, e.g. to make a changed file. */
  readonly extra?: readonly string[];
}

export function serverFileText(settings: ServerFileSettings): string {
  const { pki, server } = settings;
  return [
    '# OpenVPN Server Config | Automatically Generated | Do NOT modify!',
    'verb 3',
    'dev-type tun',
    'user nobody',
    'group nogroup',
    'topology subnet',
    'persist-key',
    'persist-tun',
    'remote-cert-tls client',
    'dh none',
    'tls-version-min 1.3',
    'data-ciphers AES-256-GCM:CHACHA20-POLY1305',
    'reneg-sec 36000',
    `server ${settings.network[0]} ${settings.network[1]}`,
    `server-ipv6 ${settings.networkSix}`,
    'max-clients 252',
    'keepalive 10 60',
    `dev ${settings.device}`,
    `port ${settings.port}`,
    'management-client-auth',
    // eduVPN clients send no user name and password; without this OpenVPN refuses them.
    'auth-user-pass-optional',
    `management ${settings.managementDir}/${settings.profileId}-${settings.processNumber}.sock unix`,
    `setenv PROFILE_ID ${settings.profileId}`,
    `proto ${settings.proto === 'udp' ? 'udp' : 'tcp-server'}`,
    '<ca>',
    pki.ca,
    '</ca>',
    '<cert>',
    server.certificate,
    '</cert>',
    '<key>',
    server.privateKey,
    '</key>',
    '<tls-crypt>',
    pki.tlsCrypt,
    '</tls-crypt>',
    ...(settings.proto === 'udp' ? ['explicit-exit-notify 1', 'push "explicit-exit-notify 1"'] : ['tcp-nodelay']),
    ...(settings.extra ?? []),
  ].join('\n');
}

export interface ClientFileSettings {
  readonly pki: TestPki;
  readonly client: CertificateAndKey;
  readonly remote: string;
  readonly port: number;
  readonly proto: 'udp' | 'tcp';
  /** Tunnel device in the client's namespace (unique, so several clients can run at once). */
  readonly device: string;
}

export function clientFileText(settings: ClientFileSettings): string {
  const { pki, client } = settings;
  return [
    'dev-type tun',
    `dev ${settings.device}`,
    'client',
    'nobind',
    'remote-cert-tls server',
    'verb 3',
    'server-poll-timeout 10',
    'tls-version-min 1.3',
    'data-ciphers AES-256-GCM:CHACHA20-POLY1305',
    'reneg-sec 0',
    '<ca>',
    pki.ca,
    '</ca>',
    '<cert>',
    client.certificate,
    '</cert>',
    '<key>',
    client.privateKey,
    '</key>',
    '<tls-crypt>',
    pki.tlsCrypt,
    '</tls-crypt>',
    `remote ${settings.remote} ${settings.port} ${settings.proto}`,
  ].join('\n');
}
