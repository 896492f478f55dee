// The mapping from an eduVPN config.php to portal.json and node.json: what is kept loads in this
// portal and in the node agent as eduVPN meant it, what moved is renamed, and everything else is
// a note saying where it went.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseNodeAgentConfig } from '../../src/agent/config.js';
import { loadPortalConfig } from '../../src/config/load.js';
import { evaluateConfigPhp, type PhpValue } from '../../src/eduvpn/config-php.js';
import { ConversionError } from '../../src/eduvpn/conversion-error.js';
import { convertNodeConfig, nodeConfigWithoutFile } from '../../src/eduvpn/node-options.js';
import { formatMysqlUrl, parseMysqlUrl } from '../../src/eduvpn/mysql-location.js';
import { databaseFromPdo } from '../../src/eduvpn/pdo-dsn.js';
import { convertPortalConfig } from '../../src/eduvpn/portal-options.js';
import { NODE_CONFIG_PHP, PORTAL_CONFIG_PHP } from '../support/eduvpn-config-php.js';

function writtenPortalJson(t: { after: (fn: () => void) => void }, document: unknown): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-converted-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'portal.json');
  writeFileSync(file, JSON.stringify(document, null, 2));
  return file;
}

test('an eduVPN-shaped config.php becomes a portal.json that loads, with both profiles on their nodes', (t) => {
  const converted = convertPortalConfig(evaluateConfigPhp(PORTAL_CONFIG_PHP, 'config.php'));
  const config = loadPortalConfig(writtenPortalJson(t, converted.document));
  assert.deepEqual(
    config.profiles.map((profile) => [
      profile.profileId,
      profile.nodes.map((node) => [node.nodeNumber, node.hostName]),
    ]),
    [
      [
        'employees',
        [
          [0, 'vpn-a.example.org'],
          [1, 'vpn-b.example.org'],
        ],
      ],
      ['guests', [[1, 'vpn-b.example.org']]],
    ],
  );
  const [employees, guests] = config.profiles;
  assert.deepEqual(
    employees?.nodes.map((node) => [node.nodeUrl, node.wireGuard?.rangeFour, node.openVpn?.rangeSix]),
    [
      ['http://10.0.0.11:41194', '10.43.0.0/24', 'fd42::/64'],
      ['http://10.0.0.12:41194', '10.43.1.0/24', 'fd42:1::/64'],
    ],
  );
  assert.equal(guests?.defaultGateway, false);
  assert.equal(guests?.preferredProto, 'wireguard');
  assert.deepEqual(config.supportedSessionExpiry, ['P90D', 'P1D', 'P7D']);
  assert.equal(config.caExpiry.text, 'P10Y');
  assert.equal(config.wireGuard.mtu, 1392);
  assert.deepEqual(config.connectionLogLines, { enabled: true, originatingIp: false });
  assert.deepEqual(config.database, {
    dialect: 'postgres',
    url: 'postgres://vpn:s3cret%2Fp%40ss@db.example.org:5433/vpn_portal',
  });
  assert.deepEqual(converted.nodeNumbers, [0, 1]);
});

test('the notes name what was kept, what was renamed, what is not used and what to set', () => {
  const { notes } = convertPortalConfig(evaluateConfigPhp(PORTAL_CONFIG_PHP, 'config.php'));
  assert.equal(
    notes[0],
    'kept as they are: sessionExpiry, supportedSessionExpiry, caExpiry, connectScriptPath, WireGuard.listenPort, WireGuard.setMtu, Log.syslogConnectionEvents, Log.originatingIp, ProfileList (2 profiles)',
  );
  const expected = [
    '"vpnCaPath": an eduVPN option not used here: the OpenVPN CA is built in (generate-secrets makes it; the import brings the old one)',
    '"authModule": an eduVPN option not used here: the user portal\'s login (this portal has no user portal)',
    '"adminUserIdList": an eduVPN option not used here: the user portal\'s admin pages; administrators here use admin keys (vpn-portal admin-key) or the console\'s sign-in (adminConsole)',
    '"Api": an eduVPN option not used here: the eduVPN apps\' API (OAuth, /api/v3), which this portal does not serve',
    '"WireGuard.allowExpiryExtension": an eduVPN option not used here: the user portal\'s own renewal; administrators renew with the Admin API\'s extend',
    '"Log.authData": an eduVPN option not used here: no user signs in here, so there is no authentication data to log',
    '"Db": an eduVPN option; here it is "database" (postgres://vpn:***@db.example.org:5433/vpn_portal): the same server and account, a database of its own (vpn_portal), since this portal\'s tables share names with eduVPN\'s; create it (createdb -O vpn vpn_portal). eduVPN\'s database (postgres://vpn:***@db.example.org:5433/vpn) is what vpn-portal import eduvpn reads (--eduvpn-database)',
  ];
  for (const note of expected) assert.ok(notes.includes(note), `missing note: ${note}\nnotes:\n${notes.join('\n')}`);
  for (const option of [
    'maxActiveConfigurations',
    'styleName',
    'enabledLanguages',
    'sessionModule',
    'accessPermissionList',
  ])
    assert.ok(
      notes.some((note) => note.startsWith(`"${option}": an eduVPN option not used here: `)),
      `no note for ${option}`,
    );
  assert.ok(notes.some((note) => note.startsWith('baseUrl: to set: ')));
  assert.ok(!notes.join('\n').includes('s3cret'), 'a note shows the database password');
});

test('an option neither eduVPN nor this portal knows is left out with a note, never silently', () => {
  const converted = convertPortalConfig({
    sesionExpiry: 'P1D',
    ProfileList: [
      {
        profileId: 'a',
        displayName: 'A',
        hostName: 'h',
        wRangeFour: '10.1.0.0/24',
        wRangeSix: 'fd01::/64',
        colour: 'red',
      },
    ],
  });
  assert.deepEqual(converted.document, {
    ProfileList: [
      {
        profileId: 'a',
        displayName: 'A',
        hostName: 'h',
        wRangeFour: '10.1.0.0/24',
        wRangeSix: 'fd01::/64',
        nodeUrl: 'http://localhost:41194',
      },
    ],
  });
  assert.ok(
    converted.notes.includes(
      '"sesionExpiry": not an eduVPN 3.x option this converter knows, nor one of this portal: left out',
    ),
  );
  assert.ok(
    converted.notes.includes(
      '"ProfileList[0].colour": not an eduVPN 3.x option this converter knows, nor one of this portal: left out',
    ),
  );
});

/** A WireGuard and OpenVPN profile on one node, as eduVPN's example configuration has it; `n` keeps the ranges apart. */
function eduVpnProfile(profileId: string, n: number, options: Record<string, PhpValue> = {}): Record<string, PhpValue> {
  return {
    profileId,
    displayName: profileId.toUpperCase(),
    hostName: 'vpn.example.org',
    wRangeFour: `10.${n}.0.0/24`,
    wRangeSix: `fd${n}::/64`,
    oRangeFour: `10.${n}.1.0/24`,
    oRangeSix: `fd${n}:1::/64`,
    ...options,
  };
}

test('an address without a prefix length in routeList or excludeRouteList is one host, as eduVPN reads it', (t) => {
  const converted = convertPortalConfig({
    ProfileList: [
      eduVpnProfile('office', 60, {
        defaultGateway: false,
        routeList: ['192.168.1.10', '2001:db8::1', '192.168.2.0/24'],
        excludeRouteList: ['192.168.2.7'],
      }),
    ],
  });
  const [office] = loadPortalConfig(writtenPortalJson(t, converted.document)).profiles;
  assert.deepEqual(office?.routeList, ['192.168.1.10/32', '2001:db8::1/128', '192.168.2.0/24']);
  assert.deepEqual(office?.excludeRouteList, ['192.168.2.7/32']);
  assert.ok(
    converted.notes.includes(
      'ProfileList[0].routeList: written 192.168.1.10 as 192.168.1.10/32, 2001:db8::1 as 2001:db8::1/128: eduVPN takes an address without a prefix length as one host; this portal wants the length',
    ),
    converted.notes.join('\n'),
  );
  assert.ok(
    converted.notes.some((note) =>
      note.startsWith('ProfileList[0].excludeRouteList: written 192.168.2.7 as 192.168.2.7/32: '),
    ),
  );
});

test("a profile that leaves nodeUrl out gets eduVPN's default, so it agrees with a profile that spells it out", (t) => {
  const converted = convertPortalConfig({
    ProfileList: [eduVpnProfile('employees', 61), eduVpnProfile('guests', 62, { nodeUrl: 'http://localhost:41194' })],
  });
  const config = loadPortalConfig(writtenPortalJson(t, converted.document));
  assert.deepEqual(
    config.profiles.map((profile) => profile.nodes.map((node) => [node.nodeNumber, node.nodeUrl])),
    [[[0, 'http://localhost:41194']], [[0, 'http://localhost:41194']]],
  );
  assert.ok(
    converted.notes.includes(
      "nodeUrl: written as http://localhost:41194, eduVPN's default, in the profiles that left it out (employees): this portal's own default is http://127.0.0.1:41194, and a node has one URL in every profile",
    ),
    converted.notes.join('\n'),
  );
  // The node agent then listens where the portal calls it.
  assert.deepEqual(nodeConfigWithoutFile(0, converted.document).document.listen, { host: '127.0.0.1', port: 41194 });
});

test('an empty range list turns its protocol off, as in newer eduVPN, and a profile left with none is left out', (t) => {
  const converted = convertPortalConfig({
    ProfileList: [
      eduVpnProfile('wireguard-only', 63, { oRangeFour: [], oRangeSix: [] }),
      eduVpnProfile('openvpn-only', 64, { wRangeFour: [], wRangeSix: 'fd64::/64' }),
      eduVpnProfile('off', 65, { wRangeFour: [], wRangeSix: [], oRangeFour: [], oRangeSix: [] }),
    ],
  });
  const config = loadPortalConfig(writtenPortalJson(t, converted.document));
  assert.deepEqual(
    config.profiles.map((profile) => [profile.profileId, profile.wireGuard !== null, profile.openVpn !== null]),
    [
      ['wireguard-only', true, false],
      ['openvpn-only', false, true],
    ],
  );
  for (const note of [
    'ProfileList[0].oRangeFour ([]), ProfileList[0].oRangeSix ([]): left out: eduVPN offers OpenVPN only when both oRangeFour and oRangeSix are set and not empty lists, so it had OpenVPN off for this profile; so has this portal',
    'ProfileList[1].wRangeFour ([]), ProfileList[1].wRangeSix ("fd64::/64"): left out: eduVPN offers WireGuard only when both wRangeFour and wRangeSix are set and not empty lists, so it had WireGuard off for this profile; so has this portal',
  ])
    assert.ok(converted.notes.includes(note), `missing note: ${note}\nnotes:\n${converted.notes.join('\n')}`);
  assert.ok(
    converted.notes.some((note) =>
      note.startsWith(
        'ProfileList[2] (off): left out: it offers no VPN protocol (neither both WireGuard ranges nor both OpenVPN ranges',
      ),
    ),
  );
  assert.ok(converted.notes[0]?.endsWith('ProfileList (2 profiles)'), converted.notes[0]);
  assert.throws(
    () => convertPortalConfig({ ProfileList: [eduVpnProfile('off', 65, { wRangeFour: [], oRangeSix: [] })] }),
    /^Error: ProfileList: no profile offers a VPN protocol/,
  );
});

test('a WireGuard MTU outside what this portal sets becomes the nearest it does, and an empty displayName the profile id', (t) => {
  const small = convertPortalConfig({
    WireGuard: { setMtu: 1200 },
    ProfileList: [eduVpnProfile('office', 66, { displayName: '' })],
  });
  const config = loadPortalConfig(writtenPortalJson(t, small.document));
  assert.equal(config.wireGuard.mtu, 1280);
  assert.equal(config.profiles[0]?.displayName, 'office');
  assert.ok(
    small.notes.includes(
      "WireGuard.setMtu: 1200 written as 1280, the smallest MTU this portal sets: IPv6 needs at least 1280, and below it Linux takes the IPv6 addresses off the WireGuard interface, so eduVPN's tunnels carried no IPv6 at 1200",
    ),
    small.notes.join('\n'),
  );
  assert.ok(!small.notes[0]?.includes('WireGuard.setMtu'), 'setMtu is named as kept as it is');
  assert.ok(
    small.notes.includes(
      'ProfileList[0].displayName: empty in eduVPN, written as the profile\'s id ("office"): this portal shows a name, and wants one',
    ),
  );
  const large = convertPortalConfig({ WireGuard: { setMtu: 65000 }, ProfileList: [eduVpnProfile('office', 66)] });
  assert.equal(loadPortalConfig(writtenPortalJson(t, large.document)).wireGuard.mtu, 9000);
  assert.ok(large.notes.includes('WireGuard.setMtu: 65000 written as 9000, the largest MTU this portal sets'));
});

test("PDO DSNs become this portal's database locations; SQLite and MariaDB leave the default", () => {
  assert.deepEqual(databaseFromPdo({ dbDsn: 'sqlite:///var/lib/vpn-user-portal/db.sqlite' }), {
    kind: 'sqlite',
    eduVpnPath: '/var/lib/vpn-user-portal/db.sqlite',
  });
  assert.deepEqual(databaseFromPdo({ dbDsn: 'sqlite:/srv/db.sqlite' }), {
    kind: 'sqlite',
    eduVpnPath: '/srv/db.sqlite',
  });
  const socket = databaseFromPdo({ dbDsn: 'pgsql:dbname=vpn', dbUser: 'vpn' });
  assert.equal(
    socket.kind === 'postgres' && socket.portalUrl,
    'postgres://vpn@/vpn_portal?host=%2Fvar%2Frun%2Fpostgresql',
  );
  const inDsn = databaseFromPdo({ dbDsn: 'pgsql:host=::1;port=5432;dbname=vpn;user=u;password=pw;sslmode=require' });
  assert.equal(inDsn.kind === 'postgres' && inDsn.portalUrl, 'postgres://u:pw@[::1]:5432/vpn_portal?sslmode=require');
  assert.throws(() => databaseFromPdo({ dbDsn: 'pgsql:host=db;dbname=vpn;options=-c' }), ConversionError);
  assert.throws(() => databaseFromPdo({ dbDsn: 'pgsql:host=db' }), /names no dbname/);
  assert.throws(() => databaseFromPdo({ dbDsn: 'oci:dbname=x' }), /"oci" is not one eduVPN uses/);
  const sqlite = convertPortalConfig({
    Db: { dbDsn: 'sqlite:///var/lib/vpn-user-portal/db.sqlite' },
    ProfileList: [
      { profileId: 'a', displayName: 'A', hostName: 'h', wRangeFour: '10.1.0.0/24', wRangeSix: 'fd01::/64' },
    ],
  });
  assert.equal(sqlite.document.database, undefined);
  assert.ok(sqlite.notes.some((note) => note.includes("eduVPN's SQLite file (/var/lib/vpn-user-portal/db.sqlite)")));
});

test('a mysql DSN becomes the URL the import reads, connecting as PDO does, the password only from Db.dbPass', () => {
  const urlOf = (db: Record<string, string>): string => {
    const converted = databaseFromPdo(db);
    assert.equal(converted.kind, 'mysql');
    return converted.kind === 'mysql' ? formatMysqlUrl(converted.eduVpn) : '';
  };
  // localhost (or no host) is PDO's default socket; a unix_socket wins over host and port.
  assert.equal(
    urlOf({ dbDsn: 'mysql:host=localhost;dbname=vpn', dbUser: 'vpn', dbPass: 'p@ss:w/rd' }),
    'mysql://vpn:p%40ss%3Aw%2Frd@localhost/vpn?socket=/run/mysqld/mysqld.sock',
  );
  assert.equal(
    urlOf({ dbDsn: 'mysql:dbname=vpn', dbUser: 'vpn' }),
    'mysql://vpn@localhost/vpn?socket=/run/mysqld/mysqld.sock',
  );
  assert.equal(
    urlOf({
      dbDsn: 'mysql:host=db.example.org;port=3307;dbname=vpn;unix_socket=/srv/my.sock;charset=utf8mb4',
      dbUser: 'u',
    }),
    'mysql://u@db.example.org/vpn?socket=/srv/my.sock&charset=utf8mb4',
  );
  assert.equal(
    urlOf({ dbDsn: 'mysql:host=192.0.2.7; port=3307 ;dbname=vpn', dbUser: 'u', dbPass: 'pw' }),
    'mysql://u:pw@192.0.2.7:3307/vpn',
  );
  // What the import parses back is what the DSN said.
  const converted = databaseFromPdo({
    dbDsn: 'mysql:host=::1;port=3306;dbname=eduvpn',
    dbUser: 'vpn',
    dbPass: 's3cret;=',
  });
  assert.ok(converted.kind === 'mysql');
  assert.deepEqual(parseMysqlUrl(formatMysqlUrl(converted.eduVpn)), converted.eduVpn);
  assert.equal(converted.eduVpnDescription, 'mysql://vpn:***@[::1]:3306/eduvpn');
  assert.throws(
    () => databaseFromPdo({ dbDsn: 'mysql:host=db;dbname=vpn;sslmode=on' }),
    /"sslmode" is not a mysql DSN parameter/,
  );
  assert.throws(() => databaseFromPdo({ dbDsn: 'mysql:host=db' }), /the mysql DSN names no dbname/);
  assert.throws(() => databaseFromPdo({ dbDsn: 'mysql:dbname=vpn;unix_socket=mysqld.sock' }), /not an absolute path/);
  assert.throws(() => databaseFromPdo({ dbDsn: 'mysql:dbname=vpn', dbPass: 5 }), /Db\.dbPass: must be a string/);
  const mysql = convertPortalConfig({
    Db: { dbDsn: 'mysql:host=localhost;dbname=vpn', dbUser: 'vpn', dbPass: 'hunter2' },
    ProfileList: [
      { profileId: 'a', displayName: 'A', hostName: 'h', wRangeFour: '10.1.0.0/24', wRangeSix: 'fd01::/64' },
    ],
  });
  assert.equal(mysql.document.database, undefined, "this portal's own database stays at its default");
  const note = mysql.notes.find((each) => each.startsWith('"Db"'));
  assert.ok(
    note?.includes("eduVPN's MariaDB/MySQL database (mysql://vpn:***@localhost/vpn?socket=/run/mysqld/mysqld.sock)"),
    note,
  );
  assert.ok(!mysql.notes.join('\n').includes('hunter2'));
});

test('a config.php that is not a portal configuration is refused naming the option', () => {
  assert.throws(
    () => convertPortalConfig(['a']),
    /^Error: \(top level\): must be an array of named options \(a list found\)$/,
  );
  assert.throws(() => convertPortalConfig({ sessionExpiry: 'P1D' }), /ProfileList: missing; .*profiles\/\*\.json/);
  assert.throws(() => convertPortalConfig({ ProfileList: 'x' }), /ProfileList: must be a list of profiles/);
  assert.throws(
    () => convertPortalConfig({ WireGuard: 5, ProfileList: [] }),
    /WireGuard: must be an array of named options/,
  );
});

test('a node config.php becomes a node.json the agent accepts, its options renamed and its key file kept', (t) => {
  const portal = convertPortalConfig(evaluateConfigPhp(PORTAL_CONFIG_PHP, 'config.php')).document;
  const converted = convertNodeConfig(evaluateConfigPhp(NODE_CONFIG_PHP, 'node/config.php'), portal);
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'vpn-portal-node-json-')), 'node.1.json');
  t.after(() => rmSync(path.dirname(file), { recursive: true, force: true }));
  const config = parseNodeAgentConfig(converted.document, file);
  assert.equal(config.apiUrl.href, 'https://portal.example.org/vpn-user-portal/node-api.php');
  assert.equal(config.nodeNumber, 1);
  assert.equal(config.nodeKeyFile, '/etc/vpn-server-node/keys/node.key');
  assert.deepEqual(config.profileIdList, ['employees', 'guests']);
  assert.equal(config.openVpn.preferAes, 'yes');
  assert.equal(config.openVpn.user, 'nobody');
  assert.equal(config.openVpn.group, 'nogroup');
  assert.deepEqual(config.listen, { host: '10.0.0.12', port: 41194 });
  assert.ok(
    converted.notes.includes('"preferAes": here it is "OpenVPN.preferAes" ("yes"; absent: "auto", as vpn-server-node)'),
  );
  assert.ok(converted.notes.includes('"vpnUser": here it is "OpenVPN.user"'));
});

test('without a node config.php, node.N.json holds what the portal tells and names the rest', () => {
  const portal = convertPortalConfig(evaluateConfigPhp(PORTAL_CONFIG_PHP, 'config.php')).document;
  const converted = nodeConfigWithoutFile(0, portal);
  const config = parseNodeAgentConfig(converted.document, '/etc/vpn-portal/node.0.json');
  assert.equal(config.nodeNumber, 0);
  assert.deepEqual(config.listen, { host: '10.0.0.11', port: 41194 });
  assert.ok(converted.notes.some((note) => note.startsWith('apiUrl: to set: ')));
  const named = nodeConfigWithoutFile(0, { ProfileList: [{ nodeUrl: 'http://node0.example.org:41194' }] });
  assert.deepEqual(named.document.listen, { port: 41194 });
  assert.ok(
    named.notes.includes(
      "listen.host: to set: the address node0.example.org (this node's nodeUrl, http://node0.example.org:41194) has on this node",
    ),
  );
});

test('a node config.php with a wrong value is refused naming it', () => {
  assert.throws(() => convertNodeConfig({ nodeNumber: 'one' }, {}), /^Error: nodeNumber: must be a node number/);
  assert.throws(() => convertNodeConfig({ preferAes: 'yes' }, {}), /^Error: preferAes: must be true or false/);
});
