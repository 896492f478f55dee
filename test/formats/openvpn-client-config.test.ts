import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  clientRemotes,
  NoOpenVpnPortError,
  type OpenVpnClientCredentials,
  type OpenVpnClientProfile,
  renderOpenVpnClientConfig,
} from '../../src/openvpn/client-config.js';

/** The reference's default profile: one UDP and one TCP process, both on 1194. */
function defaultProfile(overrides: Partial<OpenVpnClientProfile> = {}): OpenVpnClientProfile {
  return {
    hostName: 'vpn.example',
    udpPortList: [1194],
    tcpPortList: [1194],
    exposedUdpPortList: [],
    exposedTcpPortList: [],
    ...overrides,
  };
}

// The renderer only inlines these texts; real PEM is not needed to pin the layout. The
// trailing newlines show that the blocks are trimmed inside their tags.
const credentials: OpenVpnClientCredentials = {
  caCertificatePem: '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n',
  certificatePem: '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n',
  privateKeyPem: '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n',
  tlsCryptKey:
    '#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n00\n-----END OpenVPN Static key V1-----',
};

/** A random source that returns the given values in turn. */
function sequence(...values: number[]): () => number {
  let next = 0;
  return () => {
    const value = values[next % values.length];
    next += 1;
    if (value === undefined) throw new Error('sequence() needs at least one value');
    return value;
  };
}

const first = (): number => 0;
const last = (): number => 0.999;

describe('the OpenVPN client file', () => {
  test('is pinned for the default profile: settings, the four inline blocks, then UDP before TCP', () => {
    assert.equal(
      renderOpenVpnClientConfig(defaultProfile(), credentials, { preferTcp: false, random: first }),
      [
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
        '-----BEGIN CERTIFICATE-----',
        'CA',
        '-----END CERTIFICATE-----',
        '</ca>',
        '<cert>',
        '-----BEGIN CERTIFICATE-----',
        'CLIENT',
        '-----END CERTIFICATE-----',
        '</cert>',
        '<key>',
        '-----BEGIN PRIVATE KEY-----',
        'KEY',
        '-----END PRIVATE KEY-----',
        '</key>',
        '<tls-crypt>',
        '#',
        '# 2048 bit OpenVPN static key',
        '#',
        '-----BEGIN OpenVPN Static key V1-----',
        '00',
        '-----END OpenVPN Static key V1-----',
        '</tls-crypt>',
        'remote vpn.example 1194 udp',
        'remote vpn.example 1194 tcp',
      ].join('\n'),
    );
  });

  test('lists the TCP remotes first when the client prefers TCP', () => {
    const text = renderOpenVpnClientConfig(defaultProfile(), credentials, { preferTcp: true, random: first });
    assert.ok(text.endsWith('</tls-crypt>\nremote vpn.example 1194 tcp\nremote vpn.example 1194 udp'), text);
  });
});

describe('the remote lines', () => {
  test('offer at most one ordinary and one special port per protocol, the ordinary one first', () => {
    const profile = defaultProfile({ udpPortList: [1194, 1195, 53, 443], tcpPortList: [1194, 1195, 80, 443] });
    assert.deepEqual(clientRemotes(profile, { preferTcp: false, random: first }), [
      'remote vpn.example 1194 udp',
      'remote vpn.example 53 udp',
      'remote vpn.example 1194 tcp',
      'remote vpn.example 80 tcp',
    ]);
    assert.deepEqual(clientRemotes(profile, { preferTcp: false, random: last }), [
      'remote vpn.example 1195 udp',
      'remote vpn.example 443 udp',
      'remote vpn.example 1195 tcp',
      'remote vpn.example 443 tcp',
    ]);
  });

  test('treat 53 as special for UDP only and 80 for TCP only', () => {
    const profile = defaultProfile({ udpPortList: [80, 53], tcpPortList: [53, 80] });
    assert.deepEqual(clientRemotes(profile, { preferTcp: false, random: first }), [
      'remote vpn.example 80 udp',
      'remote vpn.example 53 udp',
      'remote vpn.example 53 tcp',
      'remote vpn.example 80 tcp',
    ]);
  });

  test('offer a single port when a list holds only special or only ordinary ports', () => {
    const onlySpecial = defaultProfile({ udpPortList: [53, 443], tcpPortList: [] });
    assert.deepEqual(clientRemotes(onlySpecial, { preferTcp: false, random: last }), ['remote vpn.example 443 udp']);
    const onlyOrdinary = defaultProfile({ udpPortList: [], tcpPortList: [1194, 1195, 1196] });
    assert.deepEqual(clientRemotes(onlyOrdinary, { preferTcp: false, random: sequence(0.5) }), [
      'remote vpn.example 1195 tcp',
    ]);
  });

  test('use the exposed ports instead of the real ones when the profile sets them', () => {
    const profile = defaultProfile({ exposedUdpPortList: [51194], exposedTcpPortList: [443] });
    assert.deepEqual(clientRemotes(profile, { preferTcp: false, random: first }), [
      'remote vpn.example 51194 udp',
      'remote vpn.example 443 tcp',
    ]);
  });

  test('fall back to the real ports of a protocol whose exposed list is empty', () => {
    const profile = defaultProfile({ exposedTcpPortList: [443] });
    assert.deepEqual(clientRemotes(profile, { preferTcp: true, random: first }), [
      'remote vpn.example 443 tcp',
      'remote vpn.example 1194 udp',
    ]);
  });

  test('write an IPv6 host literally, as OpenVPN reads it', () => {
    const profile = defaultProfile({ hostName: '2001:db8::1', tcpPortList: [] });
    assert.deepEqual(clientRemotes(profile, { preferTcp: false, random: first }), ['remote 2001:db8::1 1194 udp']);
  });

  test('cannot be made without any port: the reference error', () => {
    const profile = defaultProfile({ udpPortList: [], tcpPortList: [] });
    assert.throws(() => clientRemotes(profile, { preferTcp: false, random: first }), NoOpenVpnPortError);
    assert.throws(
      () => renderOpenVpnClientConfig(profile, credentials, { preferTcp: false, random: first }),
      (error: unknown) => error instanceof NoOpenVpnPortError && error.message === 'no UDP/TCP port available',
    );
  });
});
