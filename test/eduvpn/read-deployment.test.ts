// The eduVPN reader against deployments the fixture writes as eduVPN lays them out (SQLite, and
// PostgreSQL on the PostgreSQL pass): every kind of record read back in pages, the counts, what
// is left behind, the keys; and each way a deployment can be wrong refused with a message that
// names it.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { EduVpnDeployment } from '../../src/eduvpn/deployment.js';
import { EduVpnReadError } from '../../src/eduvpn/read-error.js';
import { readEduVpnDeployment } from '../../src/eduvpn/read-deployment.js';
import { runOnEduVpnDatabase } from '../support/eduvpn-database.js';
import {
  type EduVpnDeploymentSpec,
  eduVpnDatabaseOfPass,
  type WrittenEduVpnDeployment,
  writeEduVpnDeployment,
} from '../support/eduvpn-deployment.js';
import { wireGuardKeys } from '../support/eduvpn-keys.js';
import { hostExec } from '../support/netns.js';

type TestContext = { after: (fn: () => Promise<void> | void) => void };

const PROFILES: EduVpnDeploymentSpec['profiles'] = [
  {
    profileId: 'office',
    displayName: 'Office',
    nodes: [
      {
        nodeNumber: 0,
        hostName: 'vpn0.example.org',
        wRangeFour: '10.60.0.0/24',
        wRangeSix: 'fd60::/64',
        oRangeFour: '10.70.0.0/24',
        oRangeSix: 'fd70::/64',
      },
      { nodeNumber: 1, hostName: 'vpn1.example.org', wRangeFour: '10.61.0.0/24', wRangeSix: 'fd61::/64' },
    ],
  },
];

const USERS: EduVpnDeploymentSpec['users'] = [
  {
    userId: 'alice',
    permissions: ['staff'],
    configurations: [
      { protocol: 'wireguard', profileId: 'office' },
      { protocol: 'wireguard', profileId: 'office' },
      { protocol: 'openvpn', profileId: 'office' },
    ],
  },
  {
    userId: 'bob',
    disabled: true,
    authorizations: [{ authKey: 'auth-bob-1', clientId: 'org.eduvpn.app.android' }],
    configurations: [
      { protocol: 'wireguard', profileId: 'office', nodeNumber: 1 },
      { protocol: 'wireguard', profileId: 'office', nodeNumber: 1, authKey: 'auth-bob-1' },
    ],
  },
  { userId: 'carol', localPassword: true },
];

async function written(t: TestContext, more: Partial<EduVpnDeploymentSpec> = {}): Promise<WrittenEduVpnDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eduvpn-reader-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return writeEduVpnDeployment(dir, { profiles: PROFILES, users: USERS, ...(await eduVpnDatabaseOfPass(t)), ...more });
}

async function opened(
  t: TestContext,
  deployment: WrittenEduVpnDeployment,
  pageSize?: number,
): Promise<EduVpnDeployment> {
  const reader = await readEduVpnDeployment(deployment.location, pageSize === undefined ? {} : { pageSize });
  t.after(() => reader.close());
  return reader;
}

async function pages<T>(iterable: AsyncIterable<readonly T[]>): Promise<T[][]> {
  const all: T[][] = [];
  for await (const page of iterable) all.push([...page]);
  return all;
}

async function refusal(deployment: WrittenEduVpnDeployment): Promise<string> {
  const error = await readEduVpnDeployment(deployment.location).then(
    async (reader) => {
      await reader.close();
      return null;
    },
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof EduVpnReadError, `expected an EduVpnReadError, got ${String(error)}`);
  return error.message;
}

test('the reader reads back every kind of record the fixture wrote, with counts and what stays behind', async (t) => {
  const deployment = await written(t);
  const reader = await opened(t, deployment);
  assert.equal(reader.schemaVersion, '2023011801');
  assert.match(reader.description, /sqlite:|postgres/);
  if (!deployment.location.database.startsWith('sqlite:')) {
    const password = new URL(deployment.location.database).password;
    assert.ok(password === '' || !reader.description.includes(`:${password}@`), 'the description shows no password');
  }

  const users = (await pages(reader.users())).flat();
  assert.deepEqual(
    users.map((user) => [user.userId, user.isDisabled, user.permissionList]),
    [
      ['alice', false, '["staff"]'],
      ['bob', true, '[]'],
      ['carol', false, '[]'],
    ],
  );
  assert.match(users[0]?.lastSeen ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/);

  const peers = (await pages(reader.wireGuardPeers())).flat();
  const expectedPeers = deployment.configurations.filter((each) => each.protocol === 'wireguard');
  assert.deepEqual(
    peers.map((peer) => [peer.publicKey, peer.userId, peer.nodeNumber, peer.ipFour, peer.ipSix, peer.authKey]).sort(),
    expectedPeers
      .map((each) => [each.connectionId, each.userId, each.nodeNumber, each.ipFour, each.ipSix, each.authKey])
      .sort(),
  );
  assert.deepEqual(peers.map((peer) => peer.ipFour).sort(), ['10.60.0.2', '10.60.0.3', '10.61.0.2', '10.61.0.3']);
  assert.ok(peers.every((peer) => typeof peer.nodeNumber === 'number'));

  const certificates = (await pages(reader.certificates())).flat();
  assert.deepEqual(
    certificates.map((certificate) => [certificate.commonName, certificate.userId, certificate.profileId]),
    deployment.configurations
      .filter((each) => each.protocol === 'openvpn')
      .map((each) => [each.connectionId, each.userId, each.profileId]),
  );
  const authorizations = (await pages(reader.authorizations())).flat();
  assert.deepEqual(
    authorizations.map((each) => [each.authKey, each.userId, each.clientId]),
    [['auth-bob-1', 'bob', 'org.eduvpn.app.android']],
  );
  const log = (await pages(reader.connectionLog())).flat();
  assert.equal(log.length, deployment.configurations.length);
  assert.equal(log[0]?.bytesIn, 123_456);
  assert.equal(typeof log[0]?.bytesOut, 'number');
  const statistics = (await pages(reader.dailyStatistics())).flat();
  assert.equal(statistics.length, 2);
  assert.deepEqual(
    statistics.map((each) => [each.profileId, each.maxConnectionCount, each.uniqueUserCount]),
    [
      ['office', 10, 5],
      ['office', 11, 6],
    ],
  );

  assert.equal(await reader.count('users'), 3);
  assert.equal(await reader.count('wireGuardPeers'), 4);
  assert.equal(await reader.count('certificates'), 1);
  assert.equal(await reader.count('authorizations'), 1);
  assert.equal(await reader.count('connectionLog'), 5);
  assert.equal(await reader.count('dailyStatistics'), 2);
  assert.deepEqual(await reader.leftBehind(), {
    localUsers: 1,
    refreshTokens: 1,
    liveStatistics: 3,
    guestUserCounts: 1,
  });
});

test('the reader returns the keys as eduVPN stored them', async (t) => {
  const deployment = await written(t);
  const { keys } = await opened(t, deployment);
  assert.equal(keys.adminApiKey, deployment.adminApiKey);
  assert.deepEqual([...keys.nodeKeys], [...deployment.nodeKeys]);
  assert.equal(keys.openVpnCa?.certificatePem, deployment.caCertificatePem.trim());
  assert.equal(keys.openVpnCa?.privateKeyPem, deployment.caPrivateKeyPem.trim());
  assert.deepEqual([...keys.tlsCryptKeys], [...deployment.tlsCryptKeys]);
  assert.deepEqual(
    [...keys.wireGuardPublicKeys],
    [...deployment.nodeWireGuardKeys].map(([node, pair]) => [node, pair.publicKey]),
  );
  assert.deepEqual(
    [...keys.wireGuardPrivateKeys],
    [...deployment.nodeWireGuardKeys].map(([node, pair]) => [node, pair.privateKey]),
  );
});

test('records come in pages of the asked size, in a stable order, across page boundaries', async (t) => {
  const deployment = await written(t, {
    generated: { users: 7, configurationsPerUser: 2, profileId: 'office', protocol: 'both' },
  });
  const reader = await opened(t, deployment, 4);
  const userPages = await pages(reader.users());
  assert.deepEqual(
    userPages.map((page) => page.length),
    [4, 4, 2],
  );
  const userIds = userPages.flat().map((user) => user.userId);
  assert.equal(new Set(userIds).size, 10);
  assert.deepEqual(userIds, [...userIds].sort());
  const peerPages = await pages(reader.wireGuardPeers());
  assert.deepEqual(
    peerPages.map((page) => page.length),
    [4, 4, 3],
  );
  assert.equal(new Set(peerPages.flat().map((peer) => peer.publicKey)).size, 11);
  const certificates = (await pages(reader.certificates())).flat();
  assert.equal(new Set(certificates.map((each) => each.commonName)).size, 8);
  const logPages = await pages(reader.connectionLog());
  assert.deepEqual(
    logPages.map((page) => page.length),
    [4, 4, 4, 4, 3],
  );
  assert.deepEqual(
    logPages.flat().map((entry) => entry.connectionId),
    deployment.configurations.map((each) => each.connectionId),
    'the connection log comes in the order it was written, each entry once',
  );
  assert.equal(await reader.count('connectionLog'), 19);
  // Read again: the same order.
  assert.deepEqual(
    (await pages(reader.users())).flat().map((user) => user.userId),
    userIds,
  );
});

test('schema 2022022201 (eduVPN 3.0 to 3.2) is read, with no guest counts', async (t) => {
  const deployment = await written(t, { schemaVersion: '2022022201' });
  const reader = await opened(t, deployment);
  assert.equal(reader.schemaVersion, '2022022201');
  assert.equal((await pages(reader.dailyStatistics())).flat().length, 2);
  assert.equal((await reader.leftBehind()).guestUserCounts, 0);
});

test('a version table holding the same version twice is read', async (t) => {
  const deployment = await written(t, { versionRows: ['2023011801', '2023011801'] });
  const reader = await opened(t, deployment);
  assert.equal(reader.schemaVersion, '2023011801');
});

test('an unknown schema version is refused, naming the versions the reader knows', async (t) => {
  const deployment = await written(t, { versionRows: ['2024060101'] });
  const message = await refusal(deployment);
  assert.match(message, /schema version 2024060101/);
  assert.match(message, /2022022201, 2023011801/);
});

test('a database without a version table is refused as not an eduVPN 3.x database', async (t) => {
  const deployment = await written(t);
  await runOnEduVpnDatabase(deployment.location.database, 'DROP TABLE version');
  const message = await refusal(deployment);
  assert.match(message, /no table "version": not an eduVPN 3\.x database/);
  assert.match(message, /2022022201, 2023011801/);
});

test('a row that does not parse is an error naming its table, key and field', async (t) => {
  const deployment = await written(t);
  const peer = deployment.configurations.find((each) => each.protocol === 'wireguard');
  assert.ok(peer !== undefined);
  await runOnEduVpnDatabase(
    deployment.location.database,
    `UPDATE wg_peers SET ip_four = '10.60.0.300' WHERE public_key = '${peer.connectionId}'`,
  );
  const reader = await opened(t, deployment);
  await assert.rejects(pages(reader.wireGuardPeers()), (error: unknown) => {
    assert.ok(error instanceof EduVpnReadError);
    assert.match(error.message, /^table wg_peers, row public_key "[^"]+": field ip_four: not a bare IPv4 address$/);
    assert.ok(error.message.includes(peer.connectionId));
    return true;
  });
  await runOnEduVpnDatabase(deployment.location.database, "UPDATE connection_log SET connected_at = 'yesterday'");
  await assert.rejects(
    pages(reader.connectionLog()),
    /table connection_log, row at (rowid|ctid) \S+: field connected_at/,
  );
});

test('a configuration or authorization whose user_id matches no user is read as having none, for the import to name it', async (t) => {
  const deployment = await written(t);
  const peer = deployment.configurations.find((each) => each.protocol === 'wireguard');
  assert.ok(peer !== undefined);
  // Rows eduVPN's foreign keys keep out: written with them off.
  const keysOff = deployment.location.database.startsWith('sqlite:')
    ? 'PRAGMA foreign_keys = OFF'
    : 'SET session_replication_role = replica';
  await runOnEduVpnDatabase(
    deployment.location.database,
    `${keysOff}; UPDATE wg_peers SET user_id = 'nobody' WHERE public_key = '${peer.connectionId}'; UPDATE oauth_authorizations SET user_id = 'nobody' WHERE auth_key = 'auth-bob-1'`,
  );
  const reader = await opened(t, deployment);
  const peers = (await pages(reader.wireGuardPeers())).flat();
  assert.deepEqual(
    peers.filter((each) => !each.userFound).map((each) => [each.publicKey, each.userId]),
    [[peer.connectionId, 'nobody']],
  );
  const authorizations = (await pages(reader.authorizations())).flat();
  assert.deepEqual(
    authorizations.map((each) => [each.authKey, each.userId, each.userFound]),
    [['auth-bob-1', 'nobody', false]],
  );
});

test('history whose user_id matches no user (a user eduVPN deleted) is read with user_id as written', async (t) => {
  const deployment = await written(t);
  const [first, second] = deployment.configurations;
  assert.ok(first !== undefined && second !== undefined);
  // connection_log has no foreign key: eduVPN keeps the history of a user it deleted.
  await runOnEduVpnDatabase(
    deployment.location.database,
    `UPDATE connection_log SET user_id = 'gone' WHERE connection_id = '${second.connectionId}'`,
  );
  const log = (await pages((await opened(t, deployment)).connectionLog())).flat();
  // An update moves the row on PostgreSQL (its ctid): found by connection, not by place.
  const named = (connectionId: string) =>
    log.filter((entry) => entry.connectionId === connectionId).map((entry) => [entry.userId, entry.writtenUserId]);
  assert.deepEqual(named(first.connectionId), [[first.userId, first.userId]]);
  assert.deepEqual(named(second.connectionId), [['gone', 'gone']]);
});

test('timestamps with Z or another offset are read as UTC with +00:00', async (t) => {
  const deployment = await written(t);
  await runOnEduVpnDatabase(
    deployment.location.database,
    "UPDATE users SET last_seen = '2027-01-01T12:00:00+02:00' WHERE user_id = 'alice'",
  );
  await runOnEduVpnDatabase(
    deployment.location.database,
    "UPDATE users SET last_seen = '2027-01-01T12:00:00Z' WHERE user_id = 'bob'",
  );
  const users = (await pages((await opened(t, deployment)).users())).flat();
  assert.equal(users.find((user) => user.userId === 'alice')?.lastSeen, '2027-01-01T10:00:00+00:00');
  assert.equal(users.find((user) => user.userId === 'bob')?.lastSeen, '2027-01-01T12:00:00+00:00');
});

test('a CA key that is not the key of the CA certificate is refused, naming both files', async (t) => {
  const deployment = await written(t);
  const keyFile = path.join(deployment.location.configDir, 'keys/ca/ca.key');
  await hostExec('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', keyFile]);
  const message = await refusal(deployment);
  assert.ok(
    message.includes(`${keyFile} is not the key of ${path.join(deployment.location.configDir, 'keys/ca/ca.crt')}`),
  );
  assert.ok(!message.includes('PRIVATE KEY'));
});

test('a CA certificate without its key is refused', async (t) => {
  const deployment = await written(t);
  await rm(path.join(deployment.location.configDir, 'keys/ca/ca.key'));
  assert.match(await refusal(deployment), /ca\.crt is there but .*ca\.key is not/);
});

test("a node's WireGuard key that does not match wireguard.N.public.key is refused, naming both files", async (t) => {
  const deployment = await written(t);
  const keyFile = deployment.location.nodeWireGuardKeyFiles.get(0 as never);
  assert.ok(keyFile !== undefined);
  const other = await wireGuardKeys();
  await writeFile(keyFile, other.privateKey);
  const message = await refusal(deployment);
  assert.ok(message.includes(keyFile));
  assert.ok(message.includes(path.join(deployment.location.dataDir, 'keys/wireguard.0.public.key')));
  assert.ok(!message.includes(other.privateKey));
});

test("a node's WireGuard key that is not a WireGuard private key is refused, naming the file, also without wireguard.N.public.key", async (t) => {
  const deployment = await written(t);
  const keyFile = deployment.location.nodeWireGuardKeyFiles.get(0 as never);
  assert.ok(keyFile !== undefined);
  await rm(path.join(deployment.location.dataDir, 'keys/wireguard.0.public.key'));
  await writeFile(keyFile, 'PrivateKey = not-a-key\n');
  assert.equal(
    await refusal(deployment),
    `${keyFile} (node 0) is not a WireGuard private key (Base64 of 32 bytes, as wg genkey writes it)`,
  );
});

test('a key file that cannot be read is refused, naming the file', async (t) => {
  const deployment = await written(t);
  const tlsCryptFile = path.join(deployment.location.dataDir, 'keys/tls-crypt-office.key');
  await rm(tlsCryptFile);
  await mkdir(tlsCryptFile);
  assert.equal(await refusal(deployment), `cannot read ${tlsCryptFile}: it is a folder, not a key file`);
});

test('a key file with the wrong content is refused without repeating it', async (t) => {
  const deployment = await written(t);
  const nodeKeyFile = path.join(deployment.location.configDir, 'keys/node.1.key');
  await writeFile(nodeKeyFile, 'not-a-secret-value');
  const message = await refusal(deployment);
  assert.equal(message, `${nodeKeyFile} is not a node secret (64 hexadecimal digits)`);
});

test('missing optional key files are simply absent', async (t) => {
  const deployment = await written(t);
  await rm(path.join(deployment.location.configDir, 'keys/admin-api.key'));
  await rm(path.join(deployment.location.configDir, 'keys/ca'), { recursive: true });
  await rm(path.join(deployment.location.dataDir, 'keys/tls-crypt-office.key'));
  const { keys } = await opened(t, {
    ...deployment,
    location: { ...deployment.location, nodeWireGuardKeyFiles: new Map() },
  });
  assert.equal(keys.adminApiKey, null);
  assert.equal(keys.openVpnCa, null);
  assert.equal(keys.tlsCryptKeys.size, 0);
  assert.equal(keys.wireGuardPrivateKeys.size, 0);
  assert.equal(keys.wireGuardPublicKeys.size, 2);
});

test('a database that is not there, or not a database location, is refused before any key is read', async (t) => {
  const deployment = await written(t);
  const missing = path.join(deployment.location.dataDir, 'gone.sqlite');
  await assert.rejects(
    readEduVpnDeployment({ ...deployment.location, database: `sqlite:${missing}` }),
    new EduVpnReadError(`the eduVPN database ${missing} does not exist`),
  );
  await assert.rejects(
    readEduVpnDeployment({ ...deployment.location, database: 'mongodb://vpn:secret@db/vpn' }),
    (error: unknown) =>
      error instanceof EduVpnReadError &&
      /must be sqlite:PATH, postgres:\/\/.* or mysql:\/\//.test(error.message) &&
      !error.message.includes('secret'),
  );
});

test('a table missing from a known schema is an error naming the table', async (t) => {
  const deployment = await written(t);
  await runOnEduVpnDatabase(deployment.location.database, 'DROP TABLE live_stats');
  const reader = await opened(t, deployment);
  await assert.rejects(reader.leftBehind(), /^EduVpnReadError: cannot read table live_stats of /);
});

/** Opens every folder and file under `dir` to all users (the test hides one file again). */
async function openToEveryone(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) await openToEveryone(file);
    else await chmod(file, 0o644);
  }
}

test('a key file the reading user may not read is refused, naming it and saying whom to run as', async (t) => {
  const deployment = await written(t);
  const root = path.resolve(deployment.location.configDir, '../..');
  await openToEveryone(root);
  // The temporary folder's parents are world-searchable already (/tmp).
  const adminKey = path.join(deployment.location.configDir, 'keys/admin-api.key');
  await chmod(adminKey, 0o600);
  // As root every file is readable: the reading runs as "nobody" for the time of the call
  // (the saved user id stays root, so the test takes root back).
  const nobody = 65534;
  process.seteuid?.(nobody);
  let error: unknown = null;
  try {
    await readEduVpnDeployment(deployment.location).then((reader) => reader.close());
  } catch (thrown) {
    error = thrown;
  } finally {
    process.seteuid?.(0);
  }
  assert.ok(error instanceof EduVpnReadError, String(error));
  assert.equal(
    error.message,
    `cannot read ${adminKey}: permission denied; run the import as root, or as a member of the web server's group (www-data on Debian, apache on Fedora and EL)`,
  );
});
