// The parts of the node agent's OpenVPN support that need no OpenVPN process: the node's
// OpenVPN settings, the portal's server files, the answers of the management interface,
// the addresses handed to clients, the portal's verdicts, the decisions about clients (against
// a scripted management connection and portal), and the vpn-daemon's two OpenVPN calls.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { cpuInfoHasAes } from '../src/agent/openvpn/aes-support.js';
import { NodeAgentConfigError, parseNodeAgentConfig } from '../src/agent/config.js';
import { buildDaemonServer, type OpenVpnConnections, type WireGuardPeers } from '../src/agent/daemon-api/server.js';
import { allocateAddresses, poolLayoutFromEnv, pushDirectives } from '../src/agent/openvpn/address-pool.js';
import { OpenVpnClients, type ManagementCommands, type OpenVpnPortal } from '../src/agent/openvpn/clients.js';
import { ManagementCommandError, quoteArgument, type ClientNotification } from '../src/agent/openvpn/management.js';
import { checkServerFile, socketPathOf } from '../src/agent/openvpn/server-file.js';
import { parseStatusClients } from '../src/agent/openvpn/status.js';
import { PortalClient, type ConnectRequest, type ConnectVerdict, type DisconnectReport } from '../src/agent/portal-client.js';
import { Secret } from '../src/shared/secret.js';
import { parseServerConfig, ServerConfigFormatError } from '../src/agent/server-config.js';
import { asNodeNumber } from '../src/shared/ids.js';
import { createLogger } from '../src/portal.js';
import { startTestPortal } from './support/test-portal.js';

const CN_ALICE = 'Im7TCdhaKqLm/Cc9UTxGhVcZ4VDXAhPbt3praxEbbsg=';
const CN_BOB = 'lOo4ma+ta8c1AJv4q83VA1P84GjmW2Wq89cJMu4dm4A=';

describe('the OpenVPN section of the node configuration', () => {
  test('has defaults for a packaged installation', () => {
    const config = parseNodeAgentConfig({ nodeKeyFile: 'node.key' }, '/etc/vpn-portal-node/node.json');
    assert.deepEqual(config.openVpn, {
      configDir: '/var/lib/vpn-portal-node/openvpn',
      managementDir: '/run/vpn-portal-node/openvpn',
      user: 'nobody',
      group: 'nogroup',
      preferAes: 'auto',
      binary: 'openvpn',
    });
  });

  test("takes relative paths from the configuration file's folder", () => {
    const config = parseNodeAgentConfig(
      {
        nodeKeyFile: 'node.key',
        OpenVPN: { configDir: 'servers', managementDir: 'run', user: 'openvpn', group: 'openvpn', preferAes: 'no', binary: './bin/openvpn' },
      },
      '/etc/vpn-portal-node/node.json',
    );
    assert.deepEqual(config.openVpn, {
      configDir: '/etc/vpn-portal-node/servers',
      managementDir: '/etc/vpn-portal-node/run',
      user: 'openvpn',
      group: 'openvpn',
      preferAes: 'no',
      binary: '/etc/vpn-portal-node/bin/openvpn',
    });
  });

  test('refuses what the portal would refuse, naming the key', () => {
    const refused: [unknown, RegExp][] = [
      [{ OpenVPN: { user: 'no body' } }, /"OpenVPN\.user"/],
      [{ OpenVPN: { group: 'wheel;' } }, /"OpenVPN\.group"/],
      [{ OpenVPN: { preferAes: 'maybe' } }, /"OpenVPN\.preferAes"/],
      [{ OpenVPN: { managementDir: '/run/open vpn' } }, /"OpenVPN\.managementDir"/],
      [{ OpenVPN: { socketDir: '/run' } }, /unknown key "OpenVPN\.socketDir"/],
    ];
    for (const [section, pattern] of refused) {
      assert.throws(
        () => parseNodeAgentConfig({ nodeKeyFile: 'node.key', ...(section as object) }, '/etc/node.json'),
        (error: unknown) => {
          assert.ok(error instanceof NodeAgentConfigError, `a configuration error, not ${String(error)}`);
          assert.match(error.message, pattern);
          return true;
        },
      );
    }
  });

  test('"auto" prefers AES when the CPU lists AES instructions', () => {
    assert.equal(cpuInfoHasAes('processor\t: 0\nflags\t\t: fpu vme sse2 aes avx\n'), true);
    assert.equal(cpuInfoHasAes('processor\t: 0\nflags\t\t: fpu vme sse2 avx\n'), false);
    assert.equal(cpuInfoHasAes('Features\t: fp asimd aes pmull sha1\n'), true);
    assert.equal(cpuInfoHasAes('flags\t\t: fpu vaes avx\n'), false);
  });
});

describe("the OpenVPN files in the portal's server_config answer", () => {
  const entry = {
    name: 'employees-0.conf',
    profileId: 'employees',
    processNumber: 0,
    proto: 'udp',
    port: 1194,
    content: 'dev tun0\n<key>\nSECRET-KEY\n</key>',
  };

  test('each entry is read, and the content never prints', () => {
    const config = parseServerConfig({ wireguard: null, openvpn: [entry] });
    const [file] = config.openvpn ?? [];
    assert.equal(file?.name, 'employees-0.conf');
    assert.equal(file?.content.reveal(), entry.content);
    assert.equal(JSON.stringify(config).includes('SECRET-KEY'), false);
  });

  test('an answer without the list (older portals) has no OpenVPN servers', () => {
    assert.equal(parseServerConfig({ wireguard: null }).openvpn, undefined);
    assert.deepEqual(parseServerConfig({ wireguard: null, openvpn: [] }).openvpn, []);
  });

  test('entries that do not fit are refused, naming the field and not the content', () => {
    const refused: [unknown, RegExp][] = [
      [[{ ...entry, name: '../evil-0.conf' }], /openvpn\.0\.name/],
      [[{ ...entry, name: 'employees-1.conf' }], /openvpn\.0\.name: name must be <profileId>-<processNumber>\.conf/],
      [[{ ...entry, proto: 'udp6' }], /openvpn\.0\.proto/],
      [[entry, entry], /openvpn: file names must be unique/],
    ];
    for (const [openvpn, pattern] of refused) {
      assert.throws(
        () => parseServerConfig({ wireguard: null, openvpn }),
        (error: unknown) => {
          assert.ok(error instanceof ServerConfigFormatError, `a format error, not ${String(error)}`);
          assert.match(error.message, pattern);
          assert.equal(error.message.includes('SECRET-KEY'), false, 'the content is not repeated');
          return true;
        },
      );
    }
  });

  test('a file without the management socket or management-client-auth is not run', () => {
    const socket = socketPathOf('/run/vpn-portal-node/openvpn', { name: 'employees-0.conf' });
    assert.equal(socket, '/run/vpn-portal-node/openvpn/employees-0.sock');
    const good = [`management ${socket} unix`, 'management-client-auth', 'auth-user-pass-optional'].join('\n');
    assert.deepEqual(checkServerFile(good, socket), { errors: [], warnings: [] });

    const elsewhere = checkServerFile(good.replace(socket, '/tmp/other.sock'), socket);
    assert.match(elsewhere.errors.join(), /no "management \/run\/vpn-portal-node\/openvpn\/employees-0\.sock unix" line/);
    const open = checkServerFile(`management ${socket} unix\nauth-user-pass-optional`, socket);
    assert.match(open.errors.join(), /management-client-auth/);
    const commented = checkServerFile(`management ${socket} unix\n# management-client-auth\n<key>\nmanagement-client-auth\n</key>`, socket);
    assert.match(commented.errors.join(), /management-client-auth/, 'comments and inline blocks do not count');
    assert.match(checkServerFile(`management ${socket} unix\nmanagement-client-auth`, socket).warnings.join(), /auth-user-pass-optional/);
    const long = `/run/${'x'.repeat(100)}`;
    assert.match(checkServerFile(good, socketPathOf(long, { name: 'employees-0.conf' })).errors.join(), /longer than 107 bytes/);
  });
});

describe('answers of the management interface', () => {
  // As OpenVPN 2.6.14 answers `status 3`.
  const status = [
    'TITLE\tOpenVPN 2.6.14 x86_64-pc-linux-gnu [SSL (OpenSSL)] [LZO] [LZ4] [EPOLL] [PKCS11] [MH/PKTINFO] [AEAD] [DCO]',
    'TIME\t2026-11-22 05:37:31\t1795325851',
    'HEADER\tCLIENT_LIST\tCommon Name\tReal Address\tVirtual Address\tVirtual IPv6 Address\tBytes Received\tBytes Sent\tConnected Since\tConnected Since (time_t)\tUsername\tClient ID\tPeer ID\tData Channel Cipher',
    `CLIENT_LIST\t${CN_ALICE}\t198.18.250.2:53128\t10.77.0.9\tfd77::9\t2187\t2230\t2026-11-22 05:37:28\t1795325848\tUNDEF\t1\t0\tAES-256-GCM`,
    `CLIENT_LIST\t${CN_BOB}\t198.18.250.3:53129\t\t\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t4\t1\tAES-256-GCM`,
    'HEADER\tROUTING_TABLE\tVirtual Address\tCommon Name\tReal Address\tLast Ref\tLast Ref (time_t)',
    `ROUTING_TABLE\t10.77.0.9\t${CN_ALICE}\t198.18.250.2:53128\t2026-11-22 05:37:29\t1795325849`,
    'GLOBAL_STATS\tMax bcast/mcast queue length\t1',
  ];

  test('status 3 lists the clients by the column names of its header', () => {
    assert.deepEqual(parseStatusClients(status), [
      { commonName: CN_ALICE, cid: 1, ipFour: '10.77.0.9', ipSix: 'fd77::9', bytesReceived: 2187, bytesSent: 2230 },
      { commonName: CN_BOB, cid: 4, ipFour: null, ipSix: null, bytesReceived: 10, bytesSent: 20 },
    ]);
  });

  test('a header without a needed column is an error, not a guess', () => {
    const withoutId = status.map((line) => line.replace('\tClient ID', ''));
    assert.throws(() => parseStatusClients(withoutId), /no "Client ID" column/);
    assert.throws(() => parseStatusClients(['END']), /no HEADER line/);
  });

  test("arguments are quoted the way OpenVPN's lexer reads them, and line breaks are refused", () => {
    assert.equal(quoteArgument('refused by the portal'), '"refused by the portal"');
    assert.equal(quoteArgument('a "b" \\c'), '"a \\"b\\" \\\\c"');
    assert.throws(() => quoteArgument('one\nkill 1'), /line breaks/);
  });
});

/** The variables OpenVPN 2.6 sends with >CLIENT:CONNECT (the parts that matter here). */
function connectEnv(commonName: string, organizationalUnit = 'employees'): Map<string, string> {
  return new Map([
    ['untrusted_ip', '198.18.250.2'],
    ['untrusted_port', '52080'],
    ['common_name', commonName],
    ['X509_0_CN', commonName],
    ['X509_0_OU', organizationalUnit],
    ['password', 'whatever-the-client-sent'],
    ['ifconfig_local', '10.77.0.1'],
    ['ifconfig_netmask', '255.255.255.0'],
    ['ifconfig_ipv6_local', 'fd77::1'],
    ['ifconfig_ipv6_netbits', '112'],
    ['ifconfig_ipv6_remote', 'fd77::2'],
  ]);
}

describe('addresses for OpenVPN clients', () => {
  test("come from the server's own pool, lowest free first, IPv4 and IPv6 paired", () => {
    const layout = poolLayoutFromEnv(connectEnv(CN_ALICE));
    assert.ok(layout !== null, 'the CONNECT variables describe the pool');
    const taken = new Set<string>();
    const first = allocateAddresses(layout, (address) => taken.has(address));
    assert.deepEqual(first, { ipFour: '10.77.0.2', ipSix: 'fd77::2' });
    taken.add('10.77.0.2').add('fd77::2').add('fd77::3');
    assert.deepEqual(
      allocateAddresses(layout, (address) => taken.has(address)),
      { ipFour: '10.77.0.4', ipSix: 'fd77::4' },
      'a pair with a taken half is skipped',
    );
    assert.deepEqual(pushDirectives(layout, { ipFour: '10.77.0.4', ipSix: 'fd77::4' }), [
      'ifconfig-push 10.77.0.4 255.255.255.0',
      'ifconfig-ipv6-push fd77::4/112 fd77::1',
    ]);
  });

  test('a full pool gives nothing; network, server and broadcast are never handed out', () => {
    const env = connectEnv(CN_ALICE);
    env.set('ifconfig_netmask', '255.255.255.252');
    env.delete('ifconfig_ipv6_local');
    const layout = poolLayoutFromEnv(env);
    assert.ok(layout !== null, 'a /30 is a pool');
    const taken = new Set<string>();
    const only = allocateAddresses(layout, (address) => taken.has(address));
    assert.deepEqual(only, { ipFour: '10.77.0.2', ipSix: null });
    taken.add('10.77.0.2');
    assert.equal(
      allocateAddresses(layout, (address) => taken.has(address)),
      null,
    );
    assert.deepEqual(pushDirectives(layout, { ipFour: '10.77.0.2', ipSix: null }), ['ifconfig-push 10.77.0.2 255.255.255.252']);
  });

  test('variables that do not describe a subnet pool give no layout', () => {
    const env = connectEnv(CN_ALICE);
    env.set('ifconfig_netmask', '255.0.255.0');
    assert.equal(poolLayoutFromEnv(env), null);
    env.delete('ifconfig_netmask');
    assert.equal(poolLayoutFromEnv(env), null);
  });
});

describe('asking the portal about OpenVPN clients', () => {
  const request: ConnectRequest = {
    profileId: 'employees',
    commonName: CN_ALICE,
    originatingIp: '192.0.2.7',
    ipFour: '10.77.0.2',
    ipSix: 'fd77::2',
    reauth: false,
  };
  const clientAnswering = (answer: () => Response | Promise<Response>, sent: { url?: string; body?: string; headers?: Headers } = {}) =>
    new PortalClient({
      apiUrl: new URL('http://portal.example/vpn-user-portal/node-api.php'),
      nodeNumber: asNodeNumber(3),
      nodeKey: new Secret('k'.repeat(64)),
      profileIdList: [],
      openVpn: { user: 'nobody', group: 'nogroup', preferAes: true, managementDir: '/run/x' },
      fetch: async (input, init) => {
        sent.url = String(input);
        sent.body = String(init?.body);
        sent.headers = new Headers(init?.headers);
        return answer();
      },
    });

  test('only HTTP 200 with the body OK allows', async () => {
    const sent: { url?: string; body?: string; headers?: Headers } = {};
    assert.deepEqual(await clientAnswering(() => new Response('OK'), sent).authorizeConnect(request), { allowed: true });
    assert.equal(sent.url, 'http://portal.example/vpn-user-portal/node-api.php/connect');
    assert.deepEqual(Object.fromEntries(new URLSearchParams(sent.body)), {
      profile_id: 'employees',
      common_name: CN_ALICE,
      originating_ip: '192.0.2.7',
      ip_four: '10.77.0.2',
      ip_six: 'fd77::2',
    });
    assert.equal(sent.headers?.get('x-node-number'), '3');
    assert.equal(sent.headers?.get('authorization'), `Bearer ${'k'.repeat(64)}`);

    // Without an IPv6 pool or a known client address, those fields are left out rather than empty.
    await clientAnswering(() => new Response('OK'), sent).authorizeConnect({ ...request, originatingIp: '', ipSix: '' });
    assert.deepEqual([...new URLSearchParams(sent.body).keys()], ['profile_id', 'common_name', 'ip_four']);
  });

  test('ERR, another body, another status and no answer all deny', async () => {
    // [what, the portal's answer, whether the portal itself said no]
    const refusals: [string, () => Response | Promise<Response>, boolean][] = [
      ['ERR', () => new Response('ERR'), true],
      ['OK with a newline', () => new Response('OK\n'), false],
      ['500 OK', () => new Response('OK', { status: 500 }), false],
      ['401', () => new Response('{"error":"authentication required"}', { status: 401 }), false],
      ['no portal', () => Promise.reject(new TypeError('fetch failed')), false],
    ];
    for (const [what, answer, portalAnswered] of refusals) {
      const verdict = await clientAnswering(answer).authorizeConnect(request);
      assert.equal(verdict.allowed, false, what);
      assert.equal(verdict.allowed ? null : verdict.portalAnswered, portalAnswered, what);
    }
  });

  test('a disconnect is reported with its byte counts and fails unless the portal says OK', async () => {
    const report: DisconnectReport = { profileId: 'employees', commonName: CN_ALICE, ipFour: '10.77.0.2', ipSix: 'fd77::2', bytesIn: 2187, bytesOut: 2230 };
    const sent: { url?: string; body?: string } = {};
    await clientAnswering(() => new Response('OK'), sent).reportDisconnect(report);
    assert.equal(sent.url, 'http://portal.example/vpn-user-portal/node-api.php/disconnect');
    assert.deepEqual(Object.fromEntries(new URLSearchParams(sent.body)), {
      profile_id: 'employees',
      common_name: CN_ALICE,
      ip_four: '10.77.0.2',
      ip_six: 'fd77::2',
      bytes_in: '2187',
      bytes_out: '2230',
    });
    await assert.rejects(clientAnswering(() => new Response('nope', { status: 500 })).reportDisconnect(report), /answered 500/);
  });

  test("a burst of 1,000 questions stays within a real portal's default cap of 256 connections per address: none is refused, every one is answered", async (t) => {
    const warnings: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        warnings.push(chunk.toString('utf8'));
        done();
      },
    });
    const portal = await startTestPortal({ logger: createLogger('warn', sink) });
    t.after(() => portal.close());
    const client = new PortalClient({
      apiUrl: new URL(portal.nodeApiUrl),
      nodeNumber: asNodeNumber(0),
      nodeKey: new Secret(readFileSync(path.join(portal.dataDir, 'keys', 'node.0.key'), 'utf8').trim()),
      profileIdList: [],
      openVpn: { user: 'nobody', group: 'nogroup', preferAes: true, managementDir: '/run/x' },
    });
    const verdicts = await Promise.all(Array.from({ length: 1000 }, () => client.authorizeConnect(request)));
    // An unknown certificate: the portal says ERR. "Not answered" would mean a refused connection.
    const unanswered = verdicts.filter((verdict) => verdict.allowed || !verdict.portalAnswered);
    assert.equal(unanswered.length, 0, `the portal answered every question; first not answered: ${JSON.stringify(unanswered[0])}`);
    assert.deepEqual(
      warnings.filter((line) => line.includes('maxConnectionsPerAddress')),
      [],
      "the portal never had to refuse one of the node's connections",
    );
  });

  test('server_config tells the portal the OpenVPN user, group, cipher preference and socket folder', async () => {
    const sent: { body?: string } = {};
    await clientAnswering(() => new Response('{"wireguard":null}'), sent).fetchServerConfig();
    const form = new URLSearchParams(sent.body);
    assert.equal(form.get('vpn_user'), 'nobody');
    assert.equal(form.get('vpn_group'), 'nogroup');
    assert.equal(form.get('prefer_aes'), 'yes');
    assert.equal(form.get('management_dir'), '/run/x');
  });
});

/** A management connection that records commands; `failing` makes a command answer ERROR. */
class ScriptedManagement implements ManagementCommands {
  readonly sent: string[] = [];
  status: string[] = [
    'HEADER\tCLIENT_LIST\tCommon Name\tReal Address\tVirtual Address\tVirtual IPv6 Address\tBytes Received\tBytes Sent\tConnected Since\tConnected Since (time_t)\tUsername\tClient ID\tPeer ID\tData Channel Cipher',
  ];
  failing: RegExp | null = null;

  async command(line: string): Promise<string> {
    this.sent.push(line);
    if (this.failing?.test(line)) throw new ManagementCommandError(line.split(' ')[0] ?? '', 'client not found');
    return 'done';
  }

  async commandWithBlock(line: string, block: readonly string[]): Promise<string> {
    return this.command([line, ...block, 'END'].join('\n'));
  }

  async query(line: string): Promise<string[]> {
    this.sent.push(line);
    return this.status;
  }
}

/** A portal whose verdicts the test gives, one at a time, when it wants to. */
class ScriptedPortal implements OpenVpnPortal {
  readonly asked: ConnectRequest[] = [];
  readonly reports: DisconnectReport[] = [];
  readonly #waiting: ((verdict: ConnectVerdict) => void)[] = [];

  authorizeConnect(request: ConnectRequest): Promise<ConnectVerdict> {
    this.asked.push(request);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  async reportDisconnect(report: DisconnectReport): Promise<void> {
    this.reports.push(report);
  }

  answer(verdict: ConnectVerdict): void {
    const next = this.#waiting.shift();
    assert.ok(next !== undefined, 'the portal was asked');
    next(verdict);
  }
}

const ALLOW: ConnectVerdict = { allowed: true };
const DENY: ConnectVerdict = { allowed: false, portalAnswered: true, reason: 'the portal answered ERR' };

describe('deciding about the clients of one OpenVPN server', () => {
  const setUp = () => {
    const management = new ScriptedManagement();
    const portal = new ScriptedPortal();
    const clients = new OpenVpnClients({
      profileId: 'employees',
      server: 'employees-0.conf',
      management,
      portal,
      logger: pino({ level: 'silent' }),
      reportRetryDelayMs: 1,
    });
    const notify = (kind: ClientNotification['kind'], cid: number, env: Map<string, string>, kid: number | null = null): void =>
      clients.handle({ kind, cid, kid, env });
    return { management, portal, clients, notify };
  };
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  test('an allowed client is admitted with the addresses the portal was told about', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    assert.deepEqual(portal.asked, [
      { profileId: 'employees', commonName: CN_ALICE, originatingIp: '198.18.250.2', ipFour: '10.77.0.2', ipSix: 'fd77::2', reauth: false },
    ]);
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, ['client-auth 0 1\nifconfig-push 10.77.0.2 255.255.255.0\nifconfig-ipv6-push fd77::2/112 fd77::1\nEND']);

    // A second client while the first holds .2 gets .3.
    notify('CONNECT', 1, connectEnv(CN_BOB), 1);
    await turn();
    assert.equal(portal.asked[1]?.ipFour, '10.77.0.3');
    portal.answer(ALLOW);
    await clients.settle();

    notify(
      'ESTABLISHED',
      0,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
        ['ifconfig_pool_remote_ip6', 'fd77::2'],
      ]),
    );
    assert.equal(clients.establishedCount, 1);
    notify(
      'DISCONNECT',
      0,
      new Map([
        ['bytes_received', '2187'],
        ['bytes_sent', '2230'],
      ]),
    );
    await clients.settle();
    assert.deepEqual(portal.reports, [{ profileId: 'employees', commonName: CN_ALICE, ipFour: '10.77.0.2', ipSix: 'fd77::2', bytesIn: 2187, bytesOut: 2230 }]);
    assert.equal(clients.establishedCount, 0);
  });

  test('a refused client is denied with fixed text, and its DISCONNECT is not reported', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 5, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(DENY);
    await clients.settle();
    assert.deepEqual(management.sent, ['client-deny 5 1 "refused by the portal"']);
    notify('DISCONNECT', 5, new Map());
    await clients.settle();
    assert.deepEqual(portal.reports, []);
  });

  test('a certificate of another profile is denied without asking the portal', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 2, connectEnv(CN_ALICE, 'guests'), 1);
    await clients.settle();
    assert.deepEqual(portal.asked, []);
    assert.deepEqual(management.sent, ['client-deny 2 1 "certificate issued for another profile"']);
  });

  test('a client that leaves while the portal decides is not admitted, and an allowed one is reported gone', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 3, connectEnv(CN_ALICE), 1);
    await turn();
    notify('DISCONNECT', 3, new Map());
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, [], 'nothing is answered for a client that is gone');
    assert.equal(portal.reports.length, 1, 'the portal opened a connection: it hears of its end');
  });

  test('a client that went away before client-auth arrived is reported gone', async () => {
    const { management, portal, clients, notify } = setUp();
    management.failing = /^client-auth/;
    notify('CONNECT', 3, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    assert.equal(portal.reports.length, 1);
    assert.equal(clients.establishedCount, 0);
  });

  test('when the process ends, its connected clients are reported gone and their addresses are free again', async () => {
    const { portal, clients, notify } = setUp();
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    notify(
      'ESTABLISHED',
      0,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
        ['ifconfig_pool_remote_ip6', 'fd77::2'],
      ]),
    );

    // A CONNECT of the old process is still with the portal when it dies.
    notify('CONNECT', 1, connectEnv(CN_BOB), 1);
    await turn();
    clients.processEnded();
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(
      portal.reports.map((report) => [report.commonName, report.bytesIn]),
      [
        [CN_ALICE, 0],
        [CN_BOB, 0],
      ],
    );

    notify('CONNECT', 0, connectEnv(CN_BOB), 1);
    await turn();
    assert.equal(portal.asked.at(-1)?.ipFour, '10.77.0.2', 'the new process starts with an empty pool');
    portal.answer(DENY);
    await clients.settle();
  });

  test('disconnect ends every connection of a common name with client-kill', async () => {
    const { management, portal, clients, notify } = setUp();
    for (const cid of [0, 1]) {
      notify('CONNECT', cid, connectEnv(CN_ALICE), 1);
      await turn();
      portal.answer(ALLOW);
      await clients.settle();
    }
    management.sent.length = 0;
    assert.equal(await clients.disconnect(CN_ALICE), 2);
    assert.deepEqual(management.sent, ['client-kill 0', 'client-kill 1']);
    assert.equal(await clients.disconnect(CN_BOB), 0);
  });

  test('a renegotiation the portal refuses ends the session', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    notify(
      'ESTABLISHED',
      0,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
        ['ifconfig_pool_remote_ip6', 'fd77::2'],
      ]),
    );
    management.sent.length = 0;

    const reauth = new Map([
      ['common_name', CN_ALICE],
      ['X509_0_OU', 'employees'],
      ['trusted_ip', '198.18.250.2'],
      ['ifconfig_pool_remote_ip', '10.77.0.2'],
    ]);
    notify('REAUTH', 0, reauth, 3);
    await turn();
    assert.deepEqual(
      portal.asked.at(-1),
      { profileId: 'employees', commonName: CN_ALICE, originatingIp: '198.18.250.2', ipFour: '10.77.0.2', ipSix: 'fd77::2', reauth: true },
      'a renegotiation is asked about as such',
    );
    portal.answer(ALLOW);
    await clients.settle();
    assert.deepEqual(management.sent, ['client-auth-nt 0 3']);

    notify('REAUTH', 0, reauth, 4);
    await turn();
    portal.answer(DENY);
    await clients.settle();
    assert.deepEqual(management.sent.slice(1), ['client-deny 0 4 "refused by the portal"', 'client-kill 0']);
  });

  test('after the management connection came back, status tells who is still there', async () => {
    const { management, portal, clients, notify } = setUp();
    notify('CONNECT', 0, connectEnv(CN_ALICE), 1);
    await turn();
    portal.answer(ALLOW);
    await clients.settle();
    notify(
      'ESTABLISHED',
      0,
      new Map([
        ['common_name', CN_ALICE],
        ['ifconfig_pool_remote_ip', '10.77.0.2'],
        ['ifconfig_pool_remote_ip6', 'fd77::2'],
      ]),
    );

    // Alice left while nobody listened; Bob (cid 7) came in.
    management.status = [
      ...management.status,
      `CLIENT_LIST\t${CN_BOB}\t198.18.250.3:1\t10.77.0.3\tfd77::3\t10\t20\t2026-11-22 05:37:30\t1795325850\tUNDEF\t7\t1\tAES-256-GCM`,
    ];
    await clients.resync();
    await clients.settle();
    assert.deepEqual(
      portal.reports.map((report) => report.commonName),
      [CN_ALICE],
    );
    assert.equal(clients.establishedCount, 1);
    notify(
      'DISCONNECT',
      7,
      new Map([
        ['bytes_received', '5'],
        ['bytes_sent', '6'],
      ]),
    );
    await clients.settle();
    assert.deepEqual(portal.reports.at(-1), { profileId: 'employees', commonName: CN_BOB, ipFour: '10.77.0.3', ipSix: 'fd77::3', bytesIn: 5, bytesOut: 6 });
  });
});

describe("the vpn-daemon's OpenVPN calls", () => {
  const nodeKey = 'b'.repeat(64);
  const auth = { authorization: `Bearer ${nodeKey}` };
  const noPeers: WireGuardPeers = { list: async () => [], add: async () => undefined, remove: async () => null };
  const build = (openVpn?: OpenVpnConnections) =>
    buildDaemonServer({
      nodeKey: new Secret(nodeKey),
      peers: noPeers,
      clock: { now: () => new Date() },
      logger: pino({ level: 'silent' }),
      nodeInfo: async () => {
        throw new Error('not used');
      },
      ...(openVpn === undefined ? {} : { openVpn }),
    });

  test('connection_list lists every client; disconnect_client names one', async () => {
    const disconnected: string[] = [];
    const app = build({
      list: async () => [
        { commonName: CN_ALICE, ipFour: '10.77.0.2', ipSix: 'fd77::2' },
        { commonName: CN_BOB, ipFour: '10.78.0.2', ipSix: null },
      ],
      disconnect: async (commonName) => void disconnected.push(commonName),
    });
    const listed = await app.inject({ method: 'GET', url: '/o/connection_list', headers: auth });
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(listed.json(), {
      connection_list: [
        { common_name: CN_ALICE, ip_four: '10.77.0.2', ip_six: 'fd77::2' },
        { common_name: CN_BOB, ip_four: '10.78.0.2', ip_six: null },
      ],
    });
    const answer = await app.inject({
      method: 'POST',
      url: '/o/disconnect_client',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `common_name=${encodeURIComponent(CN_ALICE)}`,
    });
    assert.equal(answer.statusCode, 204);
    assert.deepEqual(disconnected, [CN_ALICE]);

    const unauthenticated = await app.inject({ method: 'GET', url: '/o/connection_list' });
    assert.equal(unauthenticated.statusCode, 401);
  });
});
