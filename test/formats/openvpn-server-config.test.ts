// The node's OpenVPN server files: the exact text (the reference fixture, with our one
// deliberate change), the split of the client ranges over the processes, and a real OpenVPN
// 2.6 that starts from the rendered files and lets a client with a rendered client file in.

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';

import type { OpenVpnProfileSettings, Profile, ProfileNode } from '../../src/config/portal-config.js';
import { asNodeNumber, asProfileId } from '../../src/shared/ids.js';
import { CertificateAuthority } from '../../src/openvpn/certificate-authority.js';
import { renderOpenVpnClientConfig } from '../../src/openvpn/client-config.js';
import {
  type OpenVpnServerNodeSettings,
  type OpenVpnServerProfileInput,
  processRanges,
  renderOpenVpnServerFiles,
} from '../../src/openvpn/server-config.js';
import { generateTlsCryptKey } from '../../src/openvpn/tls-crypt.js';
import { NetnsLab, requireRoot } from '../support/netns.js';

const TLS_CRYPT_KEY = [
  '#',
  '# 2048 bit OpenVPN static key',
  '#',
  '-----BEGIN OpenVPN Static key V1-----',
  'e543cbbac3c2b960733610f5d0b979c9',
  '-----END OpenVPN Static key V1-----',
].join('\n');

/** The profile of the reference's ServerConfigTest: full tunnel, two UDP ports, three DNS entries. */
function referenceProfile(
  overrides: Partial<Omit<Profile, 'openVpn'>> & { openVpn?: Partial<OpenVpnProfileSettings> } = {},
): Profile {
  const { openVpn, ...rest } = overrides;
  return {
    profileId: asProfileId('default'),
    displayName: 'Default',
    defaultGateway: true,
    dnsServerList: ['@GW4@', '9.9.9.9', '@GW6@'],
    dnsSearchDomainList: [],
    routeList: [],
    excludeRouteList: [],
    aclPermissionList: null,
    preferredProto: 'openvpn',
    wireGuard: null,
    appleOnDemand: null,
    nodes: [],
    ...rest,
    openVpn: {
      udpPortList: [1194, 1195],
      tcpPortList: [],
      exposedUdpPortList: [],
      exposedTcpPortList: [],
      blockLan: false,
      enableLog: false,
      ...openVpn,
    },
  };
}

function nodeFor(rangeFour = '10.42.42.0/24', rangeSix = 'fd42::/64', listenOn = '::'): ProfileNode {
  return {
    nodeNumber: asNodeNumber(0),
    nodeUrl: 'http://127.0.0.1:41194',
    hostName: 'vpn.example.org',
    wireGuard: null,
    openVpn: { rangeFour, rangeSix, listenOn },
  };
}

function input(profile: Profile, node: ProfileNode = nodeFor()): OpenVpnServerProfileInput {
  return {
    profile,
    node,
    caCertificatePem: '---CA---',
    server: { certificatePem: '---SERVER CERT---\n', privateKeyPem: '---SERVER KEY---\n' },
    tlsCryptKey: TLS_CRYPT_KEY,
  };
}

const referenceNode: OpenVpnServerNodeSettings = {
  vpnUser: 'openvpn',
  vpnGroup: 'openvpn',
  preferAes: false,
  managementDir: '/run/openvpn-server',
};

function contentOf(files: ReturnType<typeof renderOpenVpnServerFiles>, name: string): string {
  const file = files.find((candidate) => candidate.name === name);
  assert.ok(file !== undefined, `${name} is among ${files.map((candidate) => candidate.name).join(', ')}`);
  return file.content;
}

function linesOf(text: string): string[] {
  return text.split('\n');
}

describe('the OpenVPN server files of a node', () => {
  test('reproduce the reference fixture, authorising clients through the management socket instead of scripts', () => {
    const files = renderOpenVpnServerFiles([input(referenceProfile())], referenceNode);
    assert.deepEqual(
      files.map(({ name, profileId, processNumber, proto, port }) => ({ name, profileId, processNumber, proto, port })),
      [
        { name: 'default-0.conf', profileId: 'default', processNumber: 0, proto: 'udp', port: 1194 },
        { name: 'default-1.conf', profileId: 'default', processNumber: 1, proto: 'udp', port: 1195 },
      ],
    );
    assert.equal(
      contentOf(files, 'default-1.conf'),
      [
        '# OpenVPN Server Config | Automatically Generated | Do NOT modify!',
        'verb 3',
        'dev-type tun',
        'user openvpn',
        'group openvpn',
        'topology subnet',
        'persist-key',
        'persist-tun',
        'remote-cert-tls client',
        'dh none',
        'tls-version-min 1.3',
        'data-ciphers CHACHA20-POLY1305:AES-256-GCM',
        'reneg-sec 36000',
        'management-client-auth',
        'auth-user-pass-optional',
        'server 10.42.42.128/25 255.255.255.128',
        'server-ipv6 fd42::1:0/112',
        'max-clients 124',
        'keepalive 10 60',
        'dev tun1',
        'port 1195',
        'management /run/openvpn-server/default-1.sock unix',
        'setenv PROFILE_ID default',
        'proto udp6',
        '<ca>',
        '---CA---',
        '</ca>',
        '<cert>',
        '---SERVER CERT---',
        '</cert>',
        '<key>',
        '---SERVER KEY---',
        '</key>',
        '<tls-crypt>',
        TLS_CRYPT_KEY,
        '</tls-crypt>',
        'log /dev/null',
        'explicit-exit-notify 1',
        'push "explicit-exit-notify 1"',
        'push "redirect-gateway def1 ipv6"',
        'push "route 0.0.0.0 0.0.0.0"',
        'push "dhcp-option DNS 10.42.42.129"',
        'push "dhcp-option DNS 9.9.9.9"',
        'push "dhcp-option DNS fd42::1:1"',
        'push "block-outside-dns"',
      ].join('\n'),
    );
    const first = linesOf(contentOf(files, 'default-0.conf'));
    assert.ok(first.includes('server 10.42.42.0/25 255.255.255.128'), 'process 0 serves the first half');
    assert.ok(first.includes('push "dhcp-option DNS fd42::1"'), '@GW6@ is the first host of process 0');
  });

  test('split the ranges as the reference: equal IPv4 parts, consecutive /112 networks of IPv6', () => {
    assert.deepEqual(processRanges('10.42.42.0/24', 'fd42::/64', 4), [
      { rangeFour: '10.42.42.0/26', rangeSix: 'fd42::/112' },
      { rangeFour: '10.42.42.64/26', rangeSix: 'fd42::1:0/112' },
      { rangeFour: '10.42.42.128/26', rangeSix: 'fd42::2:0/112' },
      { rangeFour: '10.42.42.192/26', rangeSix: 'fd42::3:0/112' },
    ]);
    assert.deepEqual(processRanges('10.42.42.0/24', 'fd42::/64', 1), [
      { rangeFour: '10.42.42.0/24', rangeSix: 'fd42::/112' },
    ]);
  });

  test('refuse process counts and ranges OpenVPN could not serve', () => {
    assert.throws(() => processRanges('10.42.42.0/24', 'fd42::/64', 3), /1, 2, 4, 8, 16, 32 or 64 ports/);
    assert.throws(() => processRanges('10.42.42.0/24', 'fd42::/64', 128), /1, 2, 4, 8, 16, 32 or 64 ports/);
    assert.throws(() => processRanges('10.42.42.0/29', 'fd42::/64', 2), /too small for 2 processes/);
    assert.throws(() => processRanges('10.42.42.0/24', 'fd42::/111', 4), /too small for 4 processes/);
    assert.throws(() => processRanges('fd42::/64', '10.42.42.0/24', 1), /not an IPv4 prefix/);
  });

  test('let each process accept as many clients as its pool holds', () => {
    const maxClients = (processes: number): string[] => {
      const udpPortList = Array.from({ length: processes }, (_, index) => 1194 + index);
      return renderOpenVpnServerFiles([input(referenceProfile({ openVpn: { udpPortList } }))], referenceNode).map(
        (file) => linesOf(file.content).find((line) => line.startsWith('max-clients ')) ?? '',
      );
    };
    assert.deepEqual(maxClients(2), ['max-clients 124', 'max-clients 124']);
    assert.deepEqual(maxClients(4), Array(4).fill('max-clients 60'));
    assert.deepEqual(maxClients(1), ['max-clients 252']);
  });

  test('number the tun devices across all profiles, UDP processes before TCP ones', () => {
    const employees = referenceProfile({
      profileId: asProfileId('employees'),
      openVpn: { udpPortList: [1194], tcpPortList: [443] },
    });
    const guests = referenceProfile({
      profileId: asProfileId('guests'),
      openVpn: { udpPortList: [1195], tcpPortList: [1195] },
    });
    const files = renderOpenVpnServerFiles(
      [input(employees), input(guests, nodeFor('10.43.43.0/24', 'fd43::/64'))],
      referenceNode,
    );
    assert.deepEqual(
      files.map((file) => [
        file.name,
        file.proto,
        file.port,
        linesOf(file.content).find((line) => line.startsWith('dev tun')),
      ]),
      [
        ['employees-0.conf', 'udp', 1194, 'dev tun0'],
        ['employees-1.conf', 'tcp', 443, 'dev tun1'],
        ['guests-0.conf', 'udp', 1195, 'dev tun2'],
        ['guests-1.conf', 'tcp', 1195, 'dev tun3'],
      ],
    );
    const tcp = linesOf(contentOf(files, 'employees-1.conf'));
    assert.ok(tcp.includes('proto tcp6-server') && tcp.includes('tcp-nodelay'), 'a TCP process listens on TCP');
    assert.ok(!tcp.includes('explicit-exit-notify 1'), 'exit notification is UDP only');
    assert.ok(
      tcp.includes('management /run/openvpn-server/employees-1.sock unix'),
      'one management socket per process',
    );
  });

  test('bind to an IPv4 listen address with the IPv4 protocols and a local line', () => {
    const profile = referenceProfile({ openVpn: { udpPortList: [1194], tcpPortList: [1194] } });
    const files = renderOpenVpnServerFiles(
      [input(profile, nodeFor('10.42.42.0/24', 'fd42::/64', '192.0.2.1'))],
      referenceNode,
    );
    const udp = linesOf(contentOf(files, 'default-0.conf'));
    const tcp = linesOf(contentOf(files, 'default-1.conf'));
    assert.ok(udp.includes('proto udp') && udp.includes('local 192.0.2.1'), udp.join('\n'));
    assert.ok(tcp.includes('proto tcp-server') && tcp.includes('local 192.0.2.1'), tcp.join('\n'));
    const six = renderOpenVpnServerFiles(
      [input(profile, nodeFor('10.42.42.0/24', 'fd42::/64', '2001:db8::1'))],
      referenceNode,
    );
    assert.ok(linesOf(contentOf(six, 'default-0.conf')).includes('local 2001:db8::1'), 'an IPv6 address is bound too');
    assert.ok(linesOf(contentOf(six, 'default-0.conf')).includes('proto udp6'), 'with the IPv6 protocol');
  });

  test('follow the node and profile switches: AES first, logging, blocking the LAN', () => {
    const profile = referenceProfile({ openVpn: { udpPortList: [1194], enableLog: true, blockLan: true } });
    const [file] = renderOpenVpnServerFiles([input(profile)], {
      ...referenceNode,
      preferAes: true,
      vpnUser: 'nobody',
      vpnGroup: 'nogroup',
    });
    const lines = linesOf(file?.content ?? '');
    assert.ok(lines.includes('data-ciphers AES-256-GCM:CHACHA20-POLY1305'), 'AES is offered first');
    assert.ok(!lines.includes('log /dev/null'), 'the log is kept when the profile asks for it');
    assert.ok(lines.includes('push "redirect-gateway def1 ipv6 block-local"'), 'the LAN is blocked');
    assert.ok(lines.includes('user nobody') && lines.includes('group nogroup'), 'the node chooses the user');
  });

  test('push split-tunnel routes normalised, excluded prefixes via the normal gateway, and search domains', () => {
    const profile = referenceProfile({
      defaultGateway: false,
      routeList: ['192.168.1.0/24', '192.168.1.128/25', 'fd11::/64', '172.16.0.0/12'],
      excludeRouteList: ['192.168.1.5/32', 'fd11::5/128'],
      dnsServerList: ['@GW4@'],
      dnsSearchDomainList: ['example.org', 'example.org', 'corp.example'],
      openVpn: { udpPortList: [1194] },
    });
    const [file] = renderOpenVpnServerFiles([input(profile)], referenceNode);
    const pushes = linesOf(file?.content ?? '').filter(
      (line) => line.startsWith('push "') && !line.includes('explicit-exit'),
    );
    assert.deepEqual(pushes, [
      'push "route 172.16.0.0 255.240.0.0"',
      'push "route 192.168.1.0 255.255.255.0"',
      'push "route-ipv6 fd11::/64"',
      'push "route 192.168.1.5 255.255.255.255 net_gateway"',
      'push "route-ipv6 fd11::5/128 net_gateway_ipv6"',
      'push "dhcp-option DNS 10.42.42.1"',
      'push "dhcp-option DOMAIN-SEARCH example.org"',
      'push "dhcp-option DOMAIN-SEARCH corp.example"',
    ]);
  });

  test('push no DNS servers to a split tunnel without search domains', () => {
    const profile = referenceProfile({ defaultGateway: false, openVpn: { udpPortList: [1194] } });
    const [file] = renderOpenVpnServerFiles([input(profile)], referenceNode);
    assert.ok(!(file?.content ?? '').includes('dhcp-option'), file?.content);
  });

  test('keep IPv6 routes next to the full tunnel, whose 0.0.0.0/0 swallows the IPv4 ones', () => {
    const profile = referenceProfile({
      routeList: ['192.168.1.0/24', 'fd11::/64'],
      dnsServerList: [],
      openVpn: { udpPortList: [1194] },
    });
    const [file] = renderOpenVpnServerFiles([input(profile)], referenceNode);
    const pushes = linesOf(file?.content ?? '').filter(
      (line) => line.startsWith('push "') && !line.includes('explicit-exit'),
    );
    assert.deepEqual(pushes, [
      'push "redirect-gateway def1 ipv6"',
      'push "route 0.0.0.0 0.0.0.0"',
      'push "route-ipv6 fd11::/64"',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// The real thing: OpenVPN 2.6 in a throwaway network namespace.

const OUTPUT_TIMEOUT_MS = 20_000;

/** Collects a child's output and waits for a line to appear in it. */
function outputOf(
  child: ChildProcess,
  name: string,
): { text: () => string; waitFor: (pattern: RegExp) => Promise<RegExpExecArray> } {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return {
    text: () => text,
    async waitFor(pattern) {
      for (let waited = 0; waited < OUTPUT_TIMEOUT_MS; waited += 50) {
        const match = pattern.exec(text);
        if (match !== null) return match;
        if (child.exitCode !== null)
          assert.fail(`${name} exited (${child.exitCode}) before printing ${pattern}:\n${text}`);
        await sleep(50);
      }
      return assert.fail(`${name} did not print ${pattern} within ${OUTPUT_TIMEOUT_MS} ms:\n${text}`);
    },
  };
}

/** The promise's value, or a failure with `message()` after OUTPUT_TIMEOUT_MS. */
async function withTimeout<T>(promise: Promise<T>, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), OUTPUT_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Plays the node agent's part on a management socket: lets the first client in and reports
 * the Common Name OpenVPN saw in its certificate.
 */
function admitFirstClient(socketPath: string): { admitted: Promise<string>; socket: Socket; received: () => string } {
  const socket = createConnection(socketPath);
  let received = '';
  const admitted = new Promise<string>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      const connect = /^>CLIENT:CONNECT,(\d+),(\d+)\r?$/m.exec(received);
      if (connect === null || !/^>CLIENT:ENV,END\r?$/m.test(received)) return;
      socket.write(`client-auth-nt ${connect[1]} ${connect[2]}\n`);
      resolve(/^>CLIENT:ENV,common_name=(.*?)\r?$/m.exec(received)?.[1] ?? '(no common_name)');
    });
  });
  return { admitted, socket, received: () => received };
}

describe('OpenVPN 2.6 with the rendered files', () => {
  const lab = new NetnsLab();
  const dir = mkdtempSync(join(tmpdir(), 'openvpn-server-config-'));
  const sockets: Socket[] = [];
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await lab.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  let ca: CertificateAuthority;
  const now = new Date();
  before(async () => {
    requireRoot();
    const made = await CertificateAuthority.create({ now, notAfter: new Date(now.getTime() + 24 * 60 * 60 * 1000) });
    ca = await CertificateAuthority.load(made.certificatePem, made.privateKeyPem);
  });

  test('starts a UDP and a TCP server, and a client with a rendered client file gets in once the agent admits it', async () => {
    const namespace = await lab.namespace('ovpn');
    const tlsCryptKey = generateTlsCryptKey();
    const profile = referenceProfile({
      defaultGateway: false,
      routeList: ['192.0.2.0/24'],
      dnsServerList: [],
      // Logging on, so the processes tell on stdout how far they got.
      openVpn: { udpPortList: [1194], tcpPortList: [1194], enableLog: true },
    });
    const server = await ca.issueServer({ hostName: 'vpn.example.org', profileId: profile.profileId, now });
    const files = renderOpenVpnServerFiles(
      [{ profile, node: nodeFor(), caCertificatePem: ca.certificatePem, server, tlsCryptKey }],
      {
        vpnUser: 'nobody',
        vpnGroup: 'nogroup',
        preferAes: true,
        managementDir: dir,
      },
    );

    const servers = files.map((file) => {
      const path = join(dir, file.name);
      writeFileSync(path, file.content, { mode: 0o600 });
      return { file, output: outputOf(namespace.spawn('openvpn', ['--config', path, '--verb', '4']), file.name) };
    });
    for (const { file, output } of servers) {
      await output.waitFor(/Initialization Sequence Completed/);
      // `server 10.42.42.0/25 255.255.255.128` (the reference's form, with the /25) made the intended pool.
      const base = file.processNumber === 0 ? '10.42.42.2' : '10.42.42.130';
      assert.match(output.text(), new RegExp(`IFCONFIG POOL IPv4: base=${base.replaceAll('.', '\\.')} size=125`));
    }

    // One client over UDP, then one over TCP (prefer_tcp), each admitted by the "agent" on
    // the management socket of the process it reached.
    for (const { preferTcp, processNumber, address } of [
      { preferTcp: false, processNumber: 0, address: '10.42.42.2' },
      { preferTcp: true, processNumber: 1, address: '10.42.42.130' },
    ]) {
      const commonName = randomBytes(32).toString('base64');
      const client = await ca.issueClient({
        commonName,
        profileId: profile.profileId,
        now,
        notAfter: new Date(now.getTime() + 60 * 60 * 1000),
      });
      const clientFile = join(dir, `client-${processNumber}.ovpn`);
      const clientConfig = renderOpenVpnClientConfig(
        { hostName: '127.0.0.1', ...(profile.openVpn ?? assert.fail('the profile has OpenVPN')) },
        {
          caCertificatePem: ca.certificatePem,
          certificatePem: client.certificatePem,
          privateKeyPem: client.privateKeyPem,
          tlsCryptKey,
        },
        { preferTcp, random: Math.random },
      );
      writeFileSync(clientFile, clientConfig, { mode: 0o600 });

      const agent = admitFirstClient(join(dir, `default-${processNumber}.sock`));
      sockets.push(agent.socket);
      const clientProcess = namespace.spawn('openvpn', ['--config', clientFile, '--verb', '3']);
      const clientOutput = outputOf(clientProcess, `the client (${preferTcp ? 'TCP' : 'UDP'})`);
      const seen = await withTimeout(
        agent.admitted,
        () =>
          `no client reached the management socket:\n${agent.received()}\n--- client:\n${clientOutput.text()}\n--- server:\n${servers[processNumber]?.output.text()}`,
      );
      assert.equal(seen, commonName, 'the agent sees the connection id as the Common Name');
      await clientOutput.waitFor(/Initialization Sequence Completed/);
      assert.match(clientOutput.text(), new RegExp(`net_addr_v4_add: ${address.replaceAll('.', '\\.')}/25 dev tun`));
      assert.match(clientOutput.text(), /192\.0\.2\.0\/24/, 'the pushed route arrived');
      // Gone before the next client, which gets the same pushed route.
      const exited = new Promise((resolve) => clientProcess.once('exit', resolve));
      clientProcess.kill('SIGTERM');
      await withTimeout(exited, () => `the client did not stop:\n${clientOutput.text()}`);
    }
  });
});
