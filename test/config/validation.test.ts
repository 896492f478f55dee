// The configuration file as an administrator writes it: every mistake is reported with the
// file and the option so it can be fixed, and per-node options resolve by position in onNode
// (reference §1.3).
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadPortalConfig, resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { problemsOf } from '../support/config-problems.js';
import type { NodeNumber } from '../../src/shared/ids.js';

type ProfileFile = PortalConfigFile['ProfileList'][number];

const employees: ProfileFile = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
};

function withProfiles(...profiles: ProfileFile[]): Record<string, unknown> {
  return { dataDir: '/var/lib/vpn-portal', ProfileList: profiles };
}

function configFile(t: { after: (fn: () => void) => void }, name: string, text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

test('a valid file loads, with the documented defaults', (t) => {
  const file = configFile(t, 'portal.json', JSON.stringify(withProfiles(employees)));
  const config = loadPortalConfig(file);
  assert.equal(config.source, file);
  assert.deepEqual(config.adminApi, { allowList: ['127.0.0.0/8', '::1/128'], trustedProxyList: [] });
  assert.deepEqual(config.nodeApi, { allowList: ['0.0.0.0/0', '::/0'] });
  assert.deepEqual(config.adminConsole, {
    enabled: true,
    idleTimeoutMs: 30 * 60_000,
    sessionLifetimeMs: 12 * 3_600_000,
    oidc: null,
  });
  assert.deepEqual(config.listen, {
    host: '127.0.0.1',
    port: 8080,
    maxConnectionsPerAddress: 256,
    requestTimeoutMs: 10_000,
    keepAliveTimeoutMs: 5_000,
  });
  assert.equal(config.sessionExpiry.text, 'P90D');
  assert.deepEqual(config.supportedSessionExpiry, ['P90D']);
  assert.equal(config.wireGuard.listenPort, 51820);
  assert.equal(config.databaseTimeoutMs, 5000);
  assert.equal(config.basePath, '/vpn-user-portal');
  const [profile] = config.profiles;
  assert.equal(profile?.defaultGateway, true);
  assert.deepEqual(profile?.nodes, [
    {
      nodeNumber: 0,
      nodeUrl: 'http://127.0.0.1:41194',
      hostName: 'vpn.example.org',
      wireGuard: { rangeFour: '10.44.0.0/24', rangeSix: 'fd44::/64' },
      openVpn: null,
    },
  ]);
});

test('the embedded default configuration (serve without --config) is valid', () => {
  const config = loadPortalConfig();
  assert.equal(config.profiles.length, 1);
  assert.equal(config.listen.host, '127.0.0.1');
});

test('the effective supportedSessionExpiry list starts with sessionExpiry and has no duplicates (reference §10)', () => {
  const config = resolvePortalConfig(
    { ...withProfiles(employees), supportedSessionExpiry: ['PT12H', 'P90D', 'P1Y'] },
    'portal.json',
  );
  assert.deepEqual(config.supportedSessionExpiry, ['P90D', 'PT12H', 'P1Y']);
});

test('an unknown option is an error naming the file and the option, at the top level and in a profile', () => {
  assert.equal(
    problemsOf({ ...withProfiles(employees), sesionExpiry: 'P1D' }),
    'portal.json: (top level): Unrecognized key: "sesionExpiry"',
  );
  assert.equal(
    problemsOf(withProfiles({ ...employees, wRangeFor: '10.45.0.0/24' } as ProfileFile)),
    'portal.json: ProfileList[0]: Unrecognized key: "wRangeFor"',
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), WireGuard: { listenport: 51820 } }),
    /^portal\.json: WireGuard: Unrecognized key: "listenport"$/,
  );
});

test('an eduVPN option is named with where it went, at the top level and in the WireGuard and Log sections', () => {
  assert.equal(
    problemsOf({
      ...withProfiles(employees),
      Db: { dbDsn: 'sqlite:/var/lib/vpn-user-portal/db.sqlite' },
      authModule: 'DbAuthModule',
      LdapAuthModule: { ldapUri: 'ldaps://ldap.example.org' },
    }),
    [
      'portal.json: (top level): "Db": an eduVPN option; here it is "database" (sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE; not MariaDB/MySQL, which only vpn-portal import eduvpn reads)',
      'portal.json: (top level): "authModule": an eduVPN option not used here: the user portal\'s login (this portal has no user portal)',
      'portal.json: (top level): "LdapAuthModule": an eduVPN option not used here: the user portal\'s login (this portal has no user portal)',
    ].join('\n'),
  );
  assert.equal(
    problemsOf({ ...withProfiles(employees), WireGuard: { allowExpiryExtension: true }, Log: { authData: true } }),
    [
      'portal.json: Log: "authData": an eduVPN option not used here: no user signs in here, so there is no authentication data to log',
      'portal.json: WireGuard: "allowExpiryExtension": an eduVPN option not used here: the user portal\'s own renewal; administrators renew with the Admin API\'s extend',
    ].join('\n'),
  );
});

test("an unknown key beside an eduVPN option keeps the plain message, and the same name elsewhere is not taken for eduVPN's", () => {
  assert.equal(
    problemsOf({ ...withProfiles(employees), sesionExpiry: 'P1D', styleName: 'eduVPN' }),
    [
      'portal.json: (top level): Unrecognized key: "sesionExpiry"',
      'portal.json: (top level): "styleName": an eduVPN option not used here: the user portal\'s pages (this portal has no user portal)',
    ].join('\n'),
  );
  assert.equal(
    problemsOf(withProfiles({ ...employees, Db: 'x' } as ProfileFile)),
    'portal.json: ProfileList[0]: Unrecognized key: "Db"',
  );
  assert.equal(
    problemsOf({ ...withProfiles(employees), adminApi: { vpnCaPath: '/usr/bin/vpn-ca' } }),
    'portal.json: adminApi: Unrecognized key: "vpnCaPath"',
  );
});

test('a value that is not a CIDR prefix is an error naming the option', () => {
  assert.equal(
    problemsOf(withProfiles({ ...employees, wRangeFour: '10.44.0.0/33' })),
    'portal.json: ProfileList[0].wRangeFour: "10.44.0.0/33" is not an IP prefix such as 10.0.0.0/24',
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, wRangeSix: '10.44.0.0/24' })),
    /^portal\.json: ProfileList\[0\]\.wRangeSix: "10\.44\.0\.0\/24" is not an IPv6 prefix/,
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, routeList: ['192.168.1.0/24', 'intranet'] })),
    /^portal\.json: ProfileList\[0\]\.routeList\[1\]: "intranet" is not an IP prefix/,
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, excludeRouteList: ['300.1.1.1/32'] })),
    /ProfileList\[0\]\.excludeRouteList\[0\]/,
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), adminApi: { allowList: ['127.0.0.1/40'] } }),
    /^portal\.json: adminApi\.allowList\[0\]: "127\.0\.0\.1\/40" is not an IP prefix/,
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), adminApi: { trustedProxyList: ['proxy'] } }),
    /adminApi\.trustedProxyList\[0\]/,
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), nodeApi: { allowList: ['10.0.0.1'] } }),
    /^portal\.json: nodeApi\.allowList\[0\]: "10\.0\.0\.1" is not an IP prefix/,
  );
});

test('HTTP timeouts outside 1 s to 10 minutes and a connection cap below 1 are refused at start', () => {
  assert.equal(
    problemsOf({ ...withProfiles(employees), listen: { requestTimeout: 'PT0S' } }),
    'portal.json: listen.requestTimeout: "PT0S" must be between PT1S and PT10M',
  );
  assert.equal(
    problemsOf({ ...withProfiles(employees), listen: { keepAliveTimeout: 'PT1H' } }),
    'portal.json: listen.keepAliveTimeout: "PT1H" must be between PT1S and PT10M',
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), listen: { maxConnectionsPerAddress: 0 } }),
    /^portal\.json: listen\.maxConnectionsPerAddress: /,
  );
});

test('console session times outside their bounds are refused at start', () => {
  assert.equal(
    problemsOf({ ...withProfiles(employees), adminConsole: { idleTimeout: 'PT10S' } }),
    'portal.json: adminConsole.idleTimeout: "PT10S" must be between PT1M and P1D',
  );
  assert.equal(
    problemsOf({ ...withProfiles(employees), adminConsole: { sessionLifetime: 'P30D' } }),
    'portal.json: adminConsole.sessionLifetime: "P30D" must be between PT1M and P7D',
  );
});

test('ranges too small for any client, or an IPv6 range too small to pair with IPv4, are refused at start', () => {
  assert.equal(
    problemsOf(withProfiles({ ...employees, wRangeFour: '10.44.0.0/31' })),
    'portal.json: ProfileList[0].wRangeFour: WireGuard IPv4 range "10.44.0.0/31" is too small: a /30 or larger network is required',
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, wRangeFour: '10.44.0.1/32' })),
    /ProfileList\[0\]\.wRangeFour: .*too small/,
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, wRangeFour: '10.44.0.0/16', wRangeSix: 'fd44::/120' })),
    /^portal\.json: ProfileList\[0\]\.wRangeSix: WireGuard IPv6 range "fd44::\/120" is too small/,
  );
  // The smallest workable pair is accepted: a /30 holds one client.
  assert.doesNotThrow(() =>
    resolvePortalConfig(
      withProfiles({ ...employees, wRangeFour: '10.44.0.0/30', wRangeSix: 'fd44::/126' }),
      'portal.json',
    ),
  );
});

test('client ranges that overlap, between profiles or between the nodes of one profile, are refused', () => {
  const guests: ProfileFile = {
    ...employees,
    profileId: 'guests',
    wRangeFour: '10.44.0.128/25',
    wRangeSix: 'fd45::/64',
  };
  assert.equal(
    problemsOf(withProfiles(employees, guests)),
    'portal.json: ProfileList: client range of guests on node 0 (10.44.0.128/25) overlaps employees on node 0 (10.44.0.0/24)',
  );
  const sameSix: ProfileFile = {
    ...employees,
    profileId: 'guests',
    wRangeFour: '10.45.0.0/24',
    wRangeSix: 'fd44::/48',
  };
  assert.match(
    problemsOf(withProfiles(employees, sameSix)),
    /guests on node 0 \(fd44::\/48\) overlaps employees on node 0 \(fd44::\/64\)/,
  );
  // One range string for two nodes would hand out the same addresses twice.
  const twoNodes: ProfileFile = {
    ...employees,
    nodeUrl: ['http://node-a:41194', 'http://node-b:41194'],
    hostName: ['a.example.org', 'b.example.org'],
  };
  assert.match(
    problemsOf(withProfiles(twoNodes)),
    /employees on node 1 \(10\.44\.0\.0\/24\) overlaps employees on node 0/,
  );
});

test('a per-node list shorter than onNode names the option and the node', () => {
  const profile: ProfileFile = {
    ...employees,
    onNode: [0, 1],
    hostName: ['a.example.org'],
    nodeUrl: ['http://node-a:41194', 'http://node-b:41194'],
    wRangeFour: ['10.44.0.0/24', '10.45.0.0/24'],
    wRangeSix: ['fd44::/64', 'fd45::/64'],
  };
  assert.equal(
    problemsOf(withProfiles(profile)),
    'portal.json: ProfileList[0].hostName: has no value for node 1 (position 1 of onNode)',
  );
  assert.match(
    problemsOf(withProfiles({ ...profile, hostName: ['a', 'b'], wRangeSix: ['fd44::/64'] })),
    /^portal\.json: ProfileList\[0\]\.wRangeSix: has no value for node 1/,
  );
});

test('a profileId used twice, or not matching the reference syntax, is refused', () => {
  const again: ProfileFile = { ...employees, wRangeFour: '10.45.0.0/24', wRangeSix: 'fd45::/64' };
  assert.equal(
    problemsOf(withProfiles(employees, again)),
    'portal.json: ProfileList[1].profileId: "employees" is used by another profile',
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, profileId: 'em_ployees' })),
    /^portal\.json: ProfileList\[0\]\.profileId: must match/,
  );
  assert.match(problemsOf(withProfiles()), /^portal\.json: ProfileList: /);
});

test("durations that PHP's DateInterval would not read are refused", () => {
  assert.equal(
    problemsOf({ ...withProfiles(employees), sessionExpiry: '90 days' }),
    'portal.json: sessionExpiry: not an ISO 8601 duration such as P90D or PT12H',
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), supportedSessionExpiry: ['P1D', 'p1y'] }),
    /^portal\.json: supportedSessionExpiry\[1\]: not an ISO 8601 duration/,
  );
});

test('a databaseTimeout of no time, or of more than an hour, is refused naming the option', () => {
  for (const value of ['PT0S', 'P0D', 'PT2H']) {
    assert.equal(
      problemsOf({ ...withProfiles(employees), databaseTimeout: value }),
      `portal.json: databaseTimeout: "${value}" must be between PT1S and PT1H`,
    );
  }
  assert.equal(
    resolvePortalConfig({ ...withProfiles(employees), databaseTimeout: 'PT30S' }, 'portal.json').databaseTimeoutMs,
    30_000,
  );
});

test('revocationDeadline is PT30S unless set, from PT1S to PT1H; outside that it is refused naming the option', () => {
  assert.equal(resolvePortalConfig(withProfiles(employees), 'portal.json').revocationDeadlineMs, 30_000);
  assert.equal(
    resolvePortalConfig({ ...withProfiles(employees), revocationDeadline: 'PT2S' }, 'portal.json').revocationDeadlineMs,
    2_000,
  );
  for (const value of ['PT0S', 'PT2H']) {
    assert.equal(
      problemsOf({ ...withProfiles(employees), revocationDeadline: value }),
      `portal.json: revocationDeadline: "${value}" must be between PT1S and PT1H`,
    );
  }
});

test('databasePoolSize is a whole number from 2 to 100, default 10', () => {
  assert.equal(resolvePortalConfig(withProfiles(employees), 'portal.json').databasePoolSize, 10);
  assert.equal(
    resolvePortalConfig({ ...withProfiles(employees), databasePoolSize: 40 }, 'portal.json').databasePoolSize,
    40,
  );
  // One connection would deadlock: the reconcile pass holds one for its lock and needs another.
  for (const value of [0, 1, 101, 2.5, '10']) {
    assert.match(
      problemsOf({ ...withProfiles(employees), databasePoolSize: value }),
      /^portal\.json: databasePoolSize: /,
    );
  }
});

test('several mistakes are reported together, one line each', () => {
  const message = problemsOf(withProfiles({ ...employees, wRangeFour: '10.44.0.0/33', routeList: ['bad'] }));
  const lines = message.split('\n');
  assert.ok(lines.length >= 2, message);
  assert.ok(
    lines.every((line) => line.startsWith('portal.json: ')),
    message,
  );
  assert.ok(
    lines.some((line) => line.includes('ProfileList[0].wRangeFour')),
    message,
  );
  assert.ok(
    lines.some((line) => line.includes('ProfileList[0].routeList[0]')),
    message,
  );
});

test('a file that is not JSON, or cannot be read, is an error naming the file', (t) => {
  const broken = configFile(t, 'broken.json', '{ "ProfileList": [ , ] }');
  assert.throws(
    () => loadPortalConfig(broken),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.ok(error.message.startsWith(`${broken}: not valid JSON`), error.message);
      return true;
    },
  );
  const missing = path.join(path.dirname(broken), 'missing.json');
  assert.throws(
    () => loadPortalConfig(missing),
    (error: unknown) =>
      error instanceof ConfigError && error.message.startsWith(`${missing}: cannot read the configuration file`),
  );
  // A valid JSON document with a mistake names the file path too.
  const wrong = configFile(t, 'wrong.json', JSON.stringify({ ...withProfiles(employees), listen: { port: 70000 } }));
  assert.throws(
    () => loadPortalConfig(wrong),
    (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${wrong}: listen.port: `),
  );
});

test('per-node values are picked by position in onNode, not by node number', () => {
  const config = resolvePortalConfig(
    withProfiles({
      ...employees,
      onNode: [1, 2],
      hostName: ['a.example.org', 'b.example.org'],
      nodeUrl: ['http://node-a:41194', 'http://node-b:41194'],
      wRangeFour: ['10.44.1.0/24', '10.44.2.0/24'],
      wRangeSix: ['fd44:1::/64', 'fd44:2::/64'],
    }),
    'portal.json',
  );
  assert.deepEqual(config.profiles[0]?.nodes, [
    {
      nodeNumber: 1,
      nodeUrl: 'http://node-a:41194',
      hostName: 'a.example.org',
      wireGuard: { rangeFour: '10.44.1.0/24', rangeSix: 'fd44:1::/64' },
      openVpn: null,
    },
    {
      nodeNumber: 2,
      nodeUrl: 'http://node-b:41194',
      hostName: 'b.example.org',
      wireGuard: { rangeFour: '10.44.2.0/24', rangeSix: 'fd44:2::/64' },
      openVpn: null,
    },
  ]);
  assert.deepEqual([...config.nodes.keys()].sort(), [1, 2]);
  assert.equal(config.nodes.get(1 as NodeNumber)?.nodeUrl, 'http://node-a:41194');
});

test('a single string applies to every node; without onNode the nodes are the positions of nodeUrl', () => {
  const config = resolvePortalConfig(
    withProfiles({
      ...employees,
      hostName: 'vpn.example.org',
      nodeUrl: ['http://node-a:41194/', 'http://node-b:41194'],
      wRangeFour: ['10.44.1.0/24', '10.44.2.0/24'],
      wRangeSix: ['fd44:1::/64', 'fd44:2::/64'],
    }),
    'portal.json',
  );
  const nodes = config.profiles[0]?.nodes ?? [];
  assert.deepEqual(
    nodes.map((node) => node.nodeNumber),
    [0, 1],
  );
  assert.deepEqual(
    nodes.map((node) => node.hostName),
    ['vpn.example.org', 'vpn.example.org'],
  );
  // A trailing slash on a node URL is dropped so paths join cleanly.
  assert.deepEqual(
    nodes.map((node) => node.nodeUrl),
    ['http://node-a:41194', 'http://node-b:41194'],
  );
});

test('one node number with two different URLs in two profiles is refused', () => {
  const guests: ProfileFile = {
    ...employees,
    profileId: 'guests',
    wRangeFour: '10.45.0.0/24',
    wRangeSix: 'fd45::/64',
    nodeUrl: 'http://elsewhere:41194',
  };
  assert.match(
    problemsOf(withProfiles({ ...employees, nodeUrl: 'http://node-a:41194' }, guests)),
    /node 0 is http:\/\/node-a:41194 in another profile, not http:\/\/elsewhere:41194/,
  );
});

test('a sessionExpiry so long that the expiry date cannot be written is refused at start', () => {
  assert.match(
    problemsOf({ ...withProfiles(employees), sessionExpiry: 'P300000Y' }),
    /portal\.json: sessionExpiry: too long/,
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), supportedSessionExpiry: ['P1Y', 'P99999Y'] }),
    /supportedSessionExpiry\[1\]: too long/,
  );
});

test('a duration in the configuration is at most P100Y, the longest the Admin API takes', () => {
  assert.match(
    problemsOf({ ...withProfiles(employees), sessionExpiry: 'P101Y' }),
    /portal\.json: sessionExpiry: too long: a duration of at most P100Y/,
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), supportedSessionExpiry: ['P1Y', 'P8000Y'] }),
    /supportedSessionExpiry\[1\]: too long: a duration of at most P100Y/,
  );
  assert.equal(
    resolvePortalConfig({ ...withProfiles(employees), sessionExpiry: 'P100Y' }, 'portal.json').sessionExpiry.text,
    'P100Y',
  );
});

test("relative paths in a file are taken from the file's folder, whatever the working directory", (t) => {
  const file = configFile(
    t,
    'portal.json',
    JSON.stringify({ ...withProfiles(employees), dataDir: 'state', database: 'sqlite:db/portal.sqlite' }),
  );
  const config = loadPortalConfig(file);
  assert.equal(config.dataDir, path.join(path.dirname(file), 'state'));
  assert.equal(config.keyDir, path.join(path.dirname(file), 'state', 'keys'));
  assert.deepEqual(config.database, { dialect: 'sqlite', path: path.join(path.dirname(file), 'db', 'portal.sqlite') });
});

const openVpnStaff: ProfileFile = {
  profileId: 'staff',
  displayName: 'Staff',
  hostName: 'vpn.example.org',
  oRangeFour: '10.60.0.0/24',
  oRangeSix: 'fd60::/64',
};

test('an OpenVPN profile gets the reference defaults: UDP and TCP on 1194, listening on ::', () => {
  const [profile] = resolvePortalConfig(withProfiles(openVpnStaff), 'portal.json').profiles;
  assert.deepEqual(profile?.openVpn, {
    udpPortList: [1194],
    tcpPortList: [1194],
    exposedUdpPortList: [],
    exposedTcpPortList: [],
    blockLan: false,
    enableLog: false,
  });
  assert.deepEqual(profile?.nodes[0]?.openVpn, { rangeFour: '10.60.0.0/24', rangeSix: 'fd60::/64', listenOn: '::' });
  assert.equal(profile?.wireGuard, null);
  assert.equal(profile?.preferredProto, 'openvpn');
});

test('a profile with both protocols prefers OpenVPN unless preferredProto says otherwise (reference §2.1)', () => {
  const both = { ...openVpnStaff, wRangeFour: '10.61.0.0/24', wRangeSix: 'fd61::/64' };
  assert.equal(resolvePortalConfig(withProfiles(both), 'portal.json').profiles[0]?.preferredProto, 'openvpn');
  assert.equal(
    resolvePortalConfig(withProfiles({ ...both, preferredProto: 'wireguard' }), 'portal.json').profiles[0]
      ?.preferredProto,
    'wireguard',
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, preferredProto: 'openvpn' })),
    /ProfileList\[0\]\.preferredProto: the profile has no OpenVPN ranges/,
  );
});

test('OpenVPN mistakes are refused at start: half a range pair, a process count that does not split the range, a bad listen address', () => {
  assert.match(
    problemsOf(withProfiles({ ...openVpnStaff, oRangeSix: undefined })),
    /OpenVPN needs both oRangeFour and oRangeSix/,
  );
  assert.match(
    problemsOf(withProfiles({ ...openVpnStaff, oUdpPortList: [1194, 1195, 1196], oTcpPortList: [] })),
    /oUdpPortList.*together have 3 port\(s\).*1, 2, 4, 8, 16, 32 or 64/,
  );
  assert.match(
    problemsOf(withProfiles({ ...openVpnStaff, oUdpPortList: [1194, 1194] })),
    /oUdpPortList: lists a port twice/,
  );
  assert.match(
    problemsOf(withProfiles({ ...openVpnStaff, oRangeFour: '10.60.0.0/29' })),
    /oRangeFour: "10.60.0.0\/29" is too small for 2 OpenVPN process\(es\)/,
  );
  assert.match(
    problemsOf(withProfiles({ ...openVpnStaff, oRangeSix: 'fd60::/112' })),
    /oRangeSix: "fd60::\/112" is too small for 2 OpenVPN process\(es\).*at most \/111/,
  );
  assert.match(
    problemsOf(withProfiles({ ...openVpnStaff, oListenOn: 'any' })),
    /oListenOn: "any" is not an IP address/,
  );
  assert.match(problemsOf(withProfiles({ ...openVpnStaff, oRangeFour: '10.44.0.128/25' }, employees)), /overlaps/);
  assert.match(
    problemsOf(withProfiles({ profileId: 'none', displayName: 'None', hostName: 'h' })),
    /offers no VPN protocol/,
  );
});

test('a per-node list with more entries than the profile has nodes is a configuration error naming the option', () => {
  const message = problemsOf(
    withProfiles({
      ...employees,
      onNode: [0, 1],
      nodeUrl: ['http://10.0.0.1:41194', 'http://10.0.0.2:41194'],
      hostName: ['a.example.org', 'b.example.org', 'c.example.org'],
    }),
  );
  assert.match(
    message,
    /portal\.json: ProfileList\[0\]\.hostName: has 3 entries but the profile runs on 2 node\(s\) \(onNode: \[0, 1\]\)/,
  );
  const ranges = problemsOf(
    withProfiles({ ...employees, wRangeFour: ['10.44.0.0/24', '10.45.0.0/24'], wRangeSix: 'fd44::/64' }),
  );
  assert.match(ranges, /ProfileList\[0\]\.wRangeFour: has 2 entries but the profile runs on 1 node\(s\)/);
});

test('without baseUrl the portal is where it listens; metrics.listen takes HOST:PORT and defaults to 127.0.0.1:9466', () => {
  const config = resolvePortalConfig(
    { ...withProfiles(employees), listen: { host: '0.0.0.0', port: 8443 } },
    'portal.json',
  );
  assert.equal(config.baseUrl.href, 'http://127.0.0.1:8443/vpn-user-portal/');
  assert.equal(
    resolvePortalConfig({ ...withProfiles(employees), listen: { host: '::1', port: 8080 } }, 'p').baseUrl.href,
    'http://[::1]:8080/vpn-user-portal/',
  );
  assert.deepEqual(config.metrics, { host: '127.0.0.1', port: 9466 });
  assert.deepEqual(
    resolvePortalConfig({ ...withProfiles(employees), metrics: { listen: '[::1]:9100' } }, 'p').metrics,
    { host: '::1', port: 9100 },
  );
  assert.equal(resolvePortalConfig({ ...withProfiles(employees), metrics: { listen: null } }, 'p').metrics, null);
  assert.match(
    problemsOf({ ...withProfiles(employees), metrics: { listen: '9466' } }),
    /portal\.json: metrics\.listen: must be HOST:PORT/,
  );
});

test('WireGuard ranges on one node that could hold more clients than a WireGuard interface are refused, naming the node and profiles', () => {
  const problems = problemsOf(
    withProfiles(
      { ...employees, wRangeFour: '10.0.0.0/12', wRangeSix: 'fd44::/64' },
      { ...employees, profileId: 'guests', wRangeFour: '10.32.0.0/24', wRangeSix: 'fd45::/64' },
    ),
  );
  assert.match(
    problems,
    /ProfileList: the WireGuard ranges of node 0 hold 1048826 clients \(employees \(1048573\), guests \(253\)\), more than a WireGuard interface holds \(1048576\)/,
  );
});

test('the connection hook, its timeout, the retention of history and the syslog lines are read as documented', () => {
  const config = resolvePortalConfig(
    {
      ...withProfiles(employees),
      connectScriptPath: 'hooks/connect.sh',
      connectScriptTimeout: 'PT5S',
      connectionLogRetention: 'P3M',
      Log: { syslogConnectionEvents: true },
    },
    'portal.json',
    '/etc/vpn-portal',
  );
  assert.deepEqual(config.connectScript, { path: '/etc/vpn-portal/hooks/connect.sh', timeoutMs: 5000 });
  assert.equal(config.connectionLogRetention.months, 3);
  assert.deepEqual(config.connectionLogLines, { enabled: true, originatingIp: false });
  assert.match(
    problemsOf({ ...withProfiles(employees), connectScriptPath: 'x', connectScriptTimeout: 'PT2M' }),
    /connectScriptTimeout: "PT2M" must be between PT1S and PT1M/,
  );
});

test('webhook options: allow-list entries must be CIDR prefixes, the timeout 1 s to a minute, retries and the log at least a day', () => {
  const defaults = resolvePortalConfig(withProfiles(employees), 'portal.json').webhooks;
  assert.deepEqual(
    { ...defaults, retryFor: defaults.retryFor.text, deliveryLogRetention: defaults.deliveryLogRetention.text },
    { allowPrivateTargets: [], timeoutMs: 10_000, retryFor: 'P3D', deliveryLogRetention: 'P30D' },
  );
  const problems = problemsOf({
    ...withProfiles(employees),
    webhooks: {
      allowPrivateTargets: ['127.0.0.0/8', '10.0.0.1/40'],
      timeout: 'PT2M',
      retryFor: 'PT12H',
      deliveryLogRetention: 'PT1H',
    },
  });
  assert.match(problems, /webhooks\.allowPrivateTargets\[1\]/);
  assert.match(problems, /portal\.json: webhooks\.timeout: "PT2M" must be between PT1S and PT1M/);
  assert.match(problems, /portal\.json: webhooks\.retryFor: "PT12H" must be at least P1D/);
  assert.match(problems, /portal\.json: webhooks\.deliveryLogRetention: "PT1H" must be at least P1D/);
  assert.match(
    problemsOf({ ...withProfiles(employees), webhooks: { allowPrivate: [] } }),
    /webhooks/,
    'an unknown option is refused',
  );
});

test('certificate enrollment: its files are read from the configuration file’s folder, and one that cannot be read refuses the start naming the option', (t) => {
  const file = configFile(t, 'portal.json', '{}');
  const dir = path.dirname(file);
  writeFileSync(path.join(dir, 'anchor.pem'), 'ANCHOR');
  const enrollment = {
    tls: { listen: '127.0.0.1:8443', certificate: 'missing-server.crt', key: 'missing-server.key' },
    clientCertificate: {
      trustAnchors: ['anchor.pem', 'missing-ca.pem'],
      deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
      crl: ['missing.crl'],
    },
  };
  writeFileSync(file, JSON.stringify({ ...withProfiles(employees), enrollment }));
  assert.throws(
    () => loadPortalConfig(file),
    (error: Error) =>
      error instanceof ConfigError &&
      /enrollment\.tls\.certificate: cannot read .*missing-server\.crt/.test(error.message) &&
      /enrollment\.tls\.key: cannot read/.test(error.message) &&
      /enrollment\.clientCertificate\.trustAnchors\[1\]: cannot read .*missing-ca\.pem/.test(error.message) &&
      /enrollment\.clientCertificate\.crl\[0\]: cannot read/.test(error.message) &&
      !/trustAnchors\[0\]/.test(error.message),
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), enrollment: { tls: enrollment.tls } }),
    /enrollment\.tls: needs enrollment\.clientCertificate/,
  );
  const refresh = {
    ...enrollment.clientCertificate,
    trustAnchors: [path.join(dir, 'anchor.pem')],
    crl: [],
    crlRefresh: 'P2D',
  };
  assert.match(
    problemsOf({ ...withProfiles(employees), enrollment: { clientCertificate: refresh } }),
    /enrollment\.clientCertificate\.crlRefresh: .*between PT1S and P1D/,
  );
  const loaded = resolvePortalConfig(
    { ...withProfiles(employees), enrollment: { clientCertificate: { ...refresh, crlRefresh: 'PT10S' } } },
    'portal.json',
  );
  assert.deepEqual(loaded.enrollment.clientCertificate?.trustAnchors, ['ANCHOR']);
  assert.equal(loaded.enrollment.clientCertificate?.crlRefreshMs, 10_000);
  assert.equal(loaded.enrollment.clientCertificate?.deviceId.matches, 'serial');
  assert.equal(loaded.enrollment.clientCertificate?.intuneTenantId, null);
  assert.equal(loaded.enrollment.clientCertificate?.header, 'X-SSL-Client-Cert');
  assert.match(
    problemsOf({
      ...withProfiles(employees),
      enrollment: { clientCertificate: { ...refresh, crlRefresh: 'PT10S', intuneTenantId: 'contoso' } },
    }),
    /enrollment\.clientCertificate\.intuneTenantId: must be a GUID/,
  );
});

test('mdmInventory: its secret file is read at start from the configuration file’s folder; without it, or without a provider’s options, the start is refused naming the option', (t) => {
  const file = configFile(t, 'portal.json', '{}');
  const dir = path.dirname(file);
  const intune = {
    provider: 'intune',
    tenantId: '11111111-2222-3333-4444-555555555555',
    clientId: 'portal',
    clientSecretFile: 'missing-secret',
  };
  writeFileSync(file, JSON.stringify({ ...withProfiles(employees), mdmInventory: intune }));
  assert.throws(
    () => loadPortalConfig(file),
    (error: Error) =>
      error instanceof ConfigError &&
      /mdmInventory\.clientSecretFile: cannot read .*missing-secret \(ENOENT\)/.test(error.message),
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), mdmInventory: { provider: 'jamf', clientId: 'portal' } }),
    /mdmInventory\.url: is required with provider "jamf"/,
  );
  assert.match(
    problemsOf({ ...withProfiles(employees), mdmInventory: { provider: 'jamf', url: 'https://x.jamfcloud.com' } }),
    /mdmInventory\.clientSecretFile: is required/,
  );
  assert.match(
    problemsOf({
      ...withProfiles(employees),
      mdmInventory: { provider: 'json', url: 'https://mdm.example/x', maxRetirePerPass: 0 },
    }),
    /mdmInventory\.maxRetirePerPass/,
  );
  assert.match(
    problemsOf({
      ...withProfiles(employees),
      mdmInventory: { provider: 'json', url: 'https://mdm.example/x', maxRetirePerPass: '0%' },
    }),
    /mdmInventory\.maxRetirePerPass: "0%"/,
  );

  writeFileSync(path.join(dir, 'intune-secret'), 'the-secret\n', { mode: 0o600 });
  writeFileSync(
    file,
    JSON.stringify({ ...withProfiles(employees), mdmInventory: { ...intune, clientSecretFile: 'intune-secret' } }),
  );
  const loaded = loadPortalConfig(file).mdmInventory;
  assert.ok(loaded !== null && loaded.source.provider === 'intune');
  assert.equal(loaded.source.clientSecret.reveal(), 'the-secret');
  assert.equal(String(loaded.source.clientSecret), '[redacted]', 'the secret never prints');
  assert.equal(
    loaded.source.tokenUrl,
    'https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/oauth2/v2.0/token',
  );
  assert.equal(loaded.source.graphUrl, 'https://graph.microsoft.com/v1.0');
  assert.equal(loaded.intervalMs, 15 * 60_000);
  assert.deepEqual(loaded.maxRetirePerPass, { kind: 'percent', percent: 5 });
  assert.equal(loaded.matches, 'serial');
  assert.deepEqual(loadPortalConfig(file).startWarnings, []);
  chmodSync(path.join(dir, 'intune-secret'), 0o644);
  assert.match(loadPortalConfig(file).startWarnings.join('\n'), /^mdmInventory\.clientSecretFile: .*chmod 600/);
  assert.equal(loaded.compliance, null, 'compliance is off unless configured');
});

test('mdmInventory.compliance: its defaults, and an option refused where the provider cannot act on it', () => {
  const json = { provider: 'json', url: 'https://mdm.example/x' };
  const config = resolvePortalConfig(
    { ...withProfiles(employees), mdmInventory: { ...json, compliance: {} } },
    'portal.json',
  ).mdmInventory;
  assert.deepEqual(config?.compliance, {
    undetermined: 'keep',
    staleAfterMs: null,
    maxSuspendPerPass: { kind: 'percent', percent: 5 },
  });
  const refusals: [unknown, RegExp][] = [
    [
      { provider: 'jamf', url: 'https://x.jamfcloud.com', clientId: 'c', clientSecretFile: 's', compliance: {} },
      /mdmInventory\.compliance: is read from provider "intune" or "json"/,
    ],
    [
      { ...json, compliance: { undetermined: 'suspend' } },
      /mdmInventory\.compliance\.undetermined: is for provider "intune"/,
    ],
    [{ ...json, compliance: { staleAfter: 'P30D' } }, /mdmInventory\.compliance\.staleAfter: is for provider "intune"/],
    [{ ...json, compliance: { maxSuspendPerPass: '0%' } }, /mdmInventory\.compliance\.maxSuspendPerPass: "0%"/],
    [{ ...json, compliance: { undetermined: 'retire' } }, /mdmInventory\.compliance\.undetermined/],
  ];
  for (const [mdmInventory, message] of refusals)
    assert.match(problemsOf({ ...withProfiles(employees), mdmInventory }), message);
});

test('a node number above 999,999 names onNode: a node names itself in the node API with six digits at most', () => {
  assert.match(
    problemsOf(withProfiles({ ...employees, onNode: [0, 1_000_000], nodeUrl: ['http://a:41194', 'http://b:41194'] })),
    /^portal\.json: ProfileList\[0\]\.onNode/,
  );
  assert.match(
    problemsOf(withProfiles({ ...employees, onNode: 1_000_000 })),
    /^portal\.json: ProfileList\[0\]\.onNode/,
  );
});
