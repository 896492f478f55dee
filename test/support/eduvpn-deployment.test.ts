// The eduVPN fixture itself, where it could be wrong: the certificates verify against the CA
// and carry eduVPN's subject and expiry, the node keys pair up, the files are laid out and
// written as eduVPN writes them, the addresses are allocated as eduVPN allocates them, and the
// schema has eduVPN's columns (SQLite, and PostgreSQL on the PostgreSQL pass; MariaDB with
// eduVPN's types as MariaDB makes them).
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { formatAtom } from '../../src/shared/time.js';
import {
  eduVpnDatabaseOfPass,
  type EduVpnDeploymentSpec,
  type WrittenEduVpnDeployment,
  writeEduVpnDeployment,
} from './eduvpn-deployment.js';
import { hostExec } from './netns.js';
import { onServer } from './postgres.js';
import { startPrivateMariadb } from './private-mariadb.js';

type TestContext = { after: (fn: () => Promise<void> | void) => void };

/**
 * The OpenVPN configuration's expiry: a year ahead of the real clock, in whole seconds as a
 * certificate holds them (openssl verify checks the certificate at the time it runs).
 */
const OPENVPN_EXPIRES = new Date(Math.floor(Date.now() / 1000 + 365 * 86_400) * 1000);
const OPENVPN_EXPIRES_ATOM = formatAtom(OPENVPN_EXPIRES);

/** A date as `openssl x509 -enddate` prints it: `Mar  1 10:20:30 2027 GMT`. */
function opensslDate(date: Date): string {
  const month = date.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const day = String(date.getUTCDate()).padStart(2, ' ');
  return `${month} ${day} ${date.toISOString().slice(11, 19)} ${date.getUTCFullYear()} GMT`;
}

const SPEC: EduVpnDeploymentSpec = {
  profiles: [
    {
      profileId: 'staff',
      displayName: 'Staff',
      defaultGateway: false,
      routeList: ['192.168.5.0/24'],
      udpPorts: [1194, 443],
      tcpPorts: [1195],
      nodes: [
        {
          nodeNumber: 0,
          hostName: 'a.vpn.example',
          wRangeFour: '10.80.0.0/24',
          wRangeSix: 'fd80::/64',
          oRangeFour: '10.81.0.0/24',
          oRangeSix: 'fd81::/64',
        },
        { nodeNumber: 2, hostName: 'b.vpn.example', wRangeFour: '10.82.0.0/24', wRangeSix: 'fd82:0:0:1::/64' },
      ],
    },
    {
      profileId: 'guest',
      nodes: [{ nodeNumber: 0, hostName: 'a.vpn.example', wRangeFour: '10.90.0.0/29', wRangeSix: 'fd90::/64' }],
    },
  ],
  users: [
    {
      userId: 'dora',
      configurations: [
        { protocol: 'wireguard', profileId: 'staff' },
        { protocol: 'wireguard', profileId: 'staff', nodeNumber: 2 },
        { protocol: 'wireguard', profileId: 'guest' },
        { protocol: 'openvpn', profileId: 'staff', expiresAt: OPENVPN_EXPIRES },
      ],
    },
    { userId: 'emil', configurations: [{ protocol: 'wireguard', profileId: 'staff' }] },
  ],
  wireGuardListenPort: 51900,
};

async function written(t: TestContext, spec: EduVpnDeploymentSpec = SPEC): Promise<WrittenEduVpnDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eduvpn-fixture-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return writeEduVpnDeployment(dir, { ...spec, ...(await eduVpnDatabaseOfPass(t)) });
}

/** The text between <tag> and </tag> of an OpenVPN file. */
function inline(file: string, tag: string): string {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(file);
  assert.ok(match?.[1] !== undefined, `no <${tag}> in the file`);
  return match[1];
}

test('client certificates verify against the CA and carry the profile as OU, the common name as CN and the expiry', async (t) => {
  const deployment = await written(t);
  const openVpn = deployment.configurations.find((each) => each.protocol === 'openvpn');
  assert.ok(openVpn?.file != null);
  const work = await mkdtemp(path.join(tmpdir(), 'eduvpn-verify-'));
  t.after(() => rm(work, { recursive: true, force: true }));
  await writeFile(path.join(work, 'client.crt'), `${inline(openVpn.file, 'cert')}\n`);
  const caFile = path.join(deployment.location.configDir, 'keys/ca/ca.crt');
  const verified = await hostExec('openssl', ['verify', '-CAfile', caFile, path.join(work, 'client.crt')]);
  assert.match(verified.stdout, /client\.crt: OK/);
  const subject = await hostExec('openssl', [
    'x509',
    '-in',
    path.join(work, 'client.crt'),
    '-noout',
    '-subject',
    '-enddate',
    '-ext',
    'extendedKeyUsage,basicConstraints',
  ]);
  // openssl quotes a name holding "+" or "/".
  assert.ok(subject.stdout.includes('subject=OU = staff, CN = '), subject.stdout);
  assert.ok(subject.stdout.includes(openVpn.connectionId), subject.stdout);
  assert.ok(subject.stdout.includes(`notAfter=${opensslDate(OPENVPN_EXPIRES)}\n`), subject.stdout);
  assert.match(subject.stdout, /TLS Web Client Authentication/);
  assert.match(subject.stdout, /critical\s+CA:FALSE/);
  assert.equal(openVpn.expiresAt, OPENVPN_EXPIRES_ATOM);
  const ca = await hostExec('openssl', [
    'x509',
    '-in',
    caFile,
    '-noout',
    '-subject',
    '-ext',
    'basicConstraints,keyUsage',
  ]);
  assert.match(ca.stdout, /subject=CN = VPN CA/);
  assert.match(ca.stdout, /CA:TRUE, pathlen:0/);
  assert.match(ca.stdout, /Digital Signature, Certificate Sign/);
});

test("each node's WireGuard key gives the public key the portal stored, and the secrets are 64 hex digits without a newline", async (t) => {
  const deployment = await written(t);
  assert.deepEqual([...deployment.nodeWireGuardKeys.keys()], [0, 2]);
  for (const [node, file] of deployment.location.nodeWireGuardKeyFiles) {
    const privateKey = await readFile(file, 'utf8');
    const publicKey = (await hostExec('wg', ['pubkey'], { stdin: `${privateKey}\n` })).stdout.trim();
    assert.equal(
      await readFile(path.join(deployment.location.dataDir, `keys/wireguard.${node}.public.key`), 'utf8'),
      publicKey,
    );
    assert.equal(
      file,
      path.resolve(deployment.location.configDir, `../../node-${node}/etc/vpn-server-node/keys/wireguard.key`),
    );
  }
  for (const [node, secret] of deployment.nodeKeys) {
    assert.match(
      await readFile(path.join(deployment.location.configDir, `keys/node.${node}.key`), 'utf8'),
      /^[0-9a-f]{64}$/,
    );
    assert.equal(await readFile(path.join(deployment.nodeConfigDirs.get(node) ?? '', 'keys/node.key'), 'utf8'), secret);
  }
  assert.match(
    await readFile(path.join(deployment.location.configDir, 'keys/admin-api.key'), 'utf8'),
    /^[0-9a-f]{64}$/,
  );
  const tlsCrypt = await readFile(path.join(deployment.location.dataDir, 'keys/tls-crypt-staff.key'), 'utf8');
  assert.match(
    tlsCrypt,
    /^#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n([0-9a-f]{32}\n){16}-----END OpenVPN Static key V1-----$/,
  );
});

test('WireGuard addresses are network + 2 + i per profile and node, and the file is as eduVPN 3.4.1 writes it', async (t) => {
  const deployment = await written(t);
  const peers = deployment.configurations.filter((each) => each.protocol === 'wireguard');
  assert.deepEqual(
    peers.map((each) => [each.userId, each.profileId, each.nodeNumber, each.ipFour, each.ipSix]),
    [
      ['dora', 'staff', 0, '10.80.0.2', 'fd80::2'],
      ['dora', 'staff', 2, '10.82.0.2', 'fd82:0:0:1::2'],
      ['dora', 'guest', 0, '10.90.0.2', 'fd90::2'],
      ['emil', 'staff', 0, '10.80.0.3', 'fd80::3'],
    ],
  );
  const [first] = peers;
  assert.ok(first?.file != null && first.filePath !== null);
  assert.equal(await readFile(first.filePath, 'utf8'), first.file);
  const lines = first.file.split('\n');
  const privateKey = lines.find((line) => line.startsWith('PrivateKey = '))?.slice('PrivateKey = '.length) ?? '';
  assert.equal((await hostExec('wg', ['pubkey'], { stdin: `${privateKey}\n` })).stdout.trim(), first.connectionId);
  assert.deepEqual(lines, [
    '# Portal: https://vpn.example.org/vpn-user-portal/',
    '# Profile: Staff (staff)',
    `# Expires: ${first.expiresAt}`,
    '',
    '[Interface]',
    `PrivateKey = ${privateKey}`,
    'Address = 10.80.0.2/24,fd80::2/64',
    '',
    '[Peer]',
    `PublicKey = ${deployment.nodeWireGuardKeys.get(0)?.publicKey}`,
    'AllowedIPs = 10.80.0.0/24,192.168.5.0/24,fd80::/64',
    'Endpoint = a.vpn.example:51900',
  ]);
  // wg-quick reads it (strip parses the file without touching an interface).
  const work = await mkdtemp(path.join(tmpdir(), 'eduvpn-wg-'));
  t.after(() => rm(work, { recursive: true, force: true }));
  await copyFile(first.filePath, path.join(work, 'evpn0.conf'));
  const stripped = await hostExec('wg-quick', ['strip', path.join(work, 'evpn0.conf')]);
  assert.match(stripped.stdout, /Endpoint = a\.vpn\.example:51900/);
});

test('the OpenVPN file has eduVPN 3.4.1 directives, the inline keys and one normal and one special port per protocol', async (t) => {
  const deployment = await written(t);
  const openVpn = deployment.configurations.find((each) => each.protocol === 'openvpn');
  assert.ok(openVpn?.file != null);
  const lines = openVpn.file.split('\n');
  assert.deepEqual(lines.slice(0, 13), [
    '# Portal: https://vpn.example.org/vpn-user-portal/',
    '# Profile: Staff (staff)',
    `# Expires: ${OPENVPN_EXPIRES_ATOM}`,
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
  ]);
  assert.deepEqual(lines.slice(-4), [
    '</tls-crypt>',
    'remote a.vpn.example 1194 udp',
    'remote a.vpn.example 443 udp',
    'remote a.vpn.example 1195 tcp',
  ]);
  assert.equal(inline(openVpn.file, 'ca'), deployment.caCertificatePem.trim());
  assert.equal(inline(openVpn.file, 'tls-crypt'), deployment.tlsCryptKeys.get('staff'));
  assert.match(inline(openVpn.file, 'key'), /^-----BEGIN PRIVATE KEY-----/);
});

/** eduVPN 2023011801's columns per table, from its schema (facts file §1). */
const EDUVPN_COLUMNS: Record<string, string[]> = {
  users: ['user_id', 'last_seen', 'permission_list', 'auth_data', 'is_disabled'],
  local_users: ['user_id', 'password_hash', 'created_at'],
  oauth_authorizations: ['auth_key', 'client_id', 'scope', 'authorized_at', 'expires_at', 'user_id'],
  oauth_refresh_token_log: ['auth_key', 'refresh_token_id'],
  certificates: [
    'node_number',
    'profile_id',
    'display_name',
    'common_name',
    'created_at',
    'expires_at',
    'auth_key',
    'user_id',
  ],
  wg_peers: [
    'node_number',
    'profile_id',
    'display_name',
    'public_key',
    'ip_four',
    'ip_six',
    'created_at',
    'expires_at',
    'auth_key',
    'user_id',
  ],
  connection_log: [
    'user_id',
    'profile_id',
    'vpn_proto',
    'connection_id',
    'ip_four',
    'ip_six',
    'connected_at',
    'bytes_in',
    'bytes_out',
    'disconnected_at',
  ],
  live_stats: ['date_time', 'profile_id', 'connection_count'],
  aggregate_stats: ['date', 'profile_id', 'max_connection_count', 'unique_user_count', 'unique_guest_user_count'],
  version: ['current_version'],
};

async function columnsOf(database: string): Promise<Record<string, string[]>> {
  if (database.startsWith('sqlite:')) {
    const sqlite = new SqliteDatabase(database.slice('sqlite:'.length), { readonly: true });
    try {
      const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
      return Object.fromEntries(
        tables.map(({ name }) => [
          name,
          (sqlite.pragma(`table_info(${name})`) as { name: string }[]).map((column) => column.name),
        ]),
      );
    } finally {
      sqlite.close();
    }
  }
  return onServer(database, async (client) => {
    const { rows } = await client.query<{ table_name: string; column_name: string }>(
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    );
    const tables: Record<string, string[]> = {};
    for (const row of rows) {
      const columns = tables[row.table_name] ?? [];
      columns.push(row.column_name);
      tables[row.table_name] = columns;
    }
    return tables;
  });
}

test("the database has eduVPN's tables and columns, and 2022022201 lacks the guest count", async (t) => {
  const deployment = await written(t);
  assert.deepEqual(await columnsOf(deployment.location.database), EDUVPN_COLUMNS);
  const old = await written(t, { ...SPEC, schemaVersion: '2022022201' });
  const oldColumns = await columnsOf(old.location.database);
  assert.deepEqual(oldColumns['aggregate_stats'], ['date', 'profile_id', 'max_connection_count', 'unique_user_count']);
  assert.deepEqual(oldColumns['wg_peers'], EDUVPN_COLUMNS['wg_peers']);
});

test("in MariaDB the database has eduVPN's tables and columns, BOOLEAN as TINYINT(1) and BIGINT as BIGINT", async (t) => {
  const mariadb = await startPrivateMariadb();
  t.after(() => mariadb.stop());
  const { name, url } = await mariadb.createDatabase();
  const users = SPEC.users.map((user) => (user.userId === 'emil' ? { ...user, disabled: true } : user));
  await written(t, { ...SPEC, users, mysqlUrl: url });
  const connection = await mysql.createConnection({ uri: url });
  try {
    const [rows] = await connection.query<mysql.RowDataPacket[]>(
      'SELECT table_name AS t, column_name AS c, column_type AS type FROM information_schema.columns WHERE table_schema = ? ORDER BY table_name, ordinal_position',
      [name],
    );
    const tables: Record<string, string[]> = {};
    const types = new Map<string, string>();
    for (const row of rows) {
      const table = String(row['t']);
      const column = String(row['c']);
      tables[table] = [...(tables[table] ?? []), column];
      types.set(`${table}.${column}`, String(row['type']));
    }
    assert.deepEqual(tables, EDUVPN_COLUMNS);
    assert.equal(types.get('users.is_disabled'), 'tinyint(1)');
    assert.match(types.get('wg_peers.node_number') ?? '', /^bigint/);
    assert.equal(types.get('wg_peers.public_key'), 'varchar(255)');
    const [flags] = await connection.query<mysql.RowDataPacket[]>(
      'SELECT user_id, is_disabled FROM users ORDER BY user_id',
    );
    assert.deepEqual(
      flags.map((row) => [row['user_id'], row['is_disabled']]),
      [
        ['dora', 0],
        ['emil', 1],
      ],
    );
  } finally {
    await connection.end();
  }
});

test('the generated form writes users times configurations, with disabled users and distinct addresses', async (t) => {
  const deployment = await written(t, {
    ...SPEC,
    users: [],
    generated: { users: 300, configurationsPerUser: 3, profileId: 'staff', protocol: 'both', disabledEvery: 10 },
  });
  assert.equal(deployment.rowCounts.get('users'), 300);
  assert.equal((deployment.rowCounts.get('wg_peers') ?? 0) + (deployment.rowCounts.get('certificates') ?? 0), 900);
  assert.equal(deployment.users.filter((user) => user.disabled).length, 30);
  const addresses = deployment.configurations.flatMap((each) => (each.ipFour === null ? [] : [each.ipFour]));
  assert.equal(new Set(addresses).size, addresses.length);
  assert.ok(deployment.configurations.every((each) => each.file === null));
});
