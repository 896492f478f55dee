// The eduVPN reader against a deployment kept in MariaDB (one private server for the file, a
// database and an account per test): eduVPN's DDL as MariaDB runs it (BOOLEAN as TINYINT(1),
// BIGINT handed over as strings, keys compared without regard to case), every kind of record
// read back in pages, both schema versions, and the refusals that name what is wrong without
// repeating the password.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { EduVpnDeployment } from '../../src/eduvpn/deployment.js';
import { readEduVpnDeployment } from '../../src/eduvpn/read-deployment.js';
import { EduVpnReadError } from '../../src/eduvpn/read-error.js';
import { runOnEduVpnDatabase } from '../support/eduvpn-database.js';
import {
  type EduVpnDeploymentSpec,
  type WrittenEduVpnDeployment,
  writeEduVpnDeployment,
} from '../support/eduvpn-deployment.js';
import { type PrivateMariadb, startPrivateMariadb } from '../support/private-mariadb.js';

type TestContext = { after: (fn: () => Promise<void> | void) => void };

let mariadb: PrivateMariadb;
before(async () => {
  mariadb = await startPrivateMariadb();
});
after(() => mariadb.stop());

const PROFILES: EduVpnDeploymentSpec['profiles'] = [
  {
    profileId: 'office',
    nodes: [
      {
        nodeNumber: 0,
        hostName: 'vpn0.example.org',
        wRangeFour: '10.62.0.0/24',
        wRangeSix: 'fd62::/64',
        oRangeFour: '10.72.0.0/24',
        oRangeSix: 'fd72::/64',
      },
    ],
  },
];

const USERS: EduVpnDeploymentSpec['users'] = [
  {
    userId: 'alice',
    permissions: ['staff'],
    configurations: [
      { protocol: 'wireguard', profileId: 'office' },
      { protocol: 'openvpn', profileId: 'office' },
    ],
  },
  {
    userId: 'bob',
    disabled: true,
    authorizations: [{ authKey: 'auth-bob-1', clientId: 'org.eduvpn.app.android' }],
    configurations: [{ protocol: 'wireguard', profileId: 'office', authKey: 'auth-bob-1' }],
  },
  { userId: 'carol', localPassword: true },
];

async function written(t: TestContext, more: Partial<EduVpnDeploymentSpec> = {}): Promise<WrittenEduVpnDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eduvpn-reader-mariadb-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { url } = await mariadb.createDatabase();
  return writeEduVpnDeployment(dir, { profiles: PROFILES, users: USERS, mysqlUrl: url, ...more });
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

async function refusal(location: WrittenEduVpnDeployment['location']): Promise<string> {
  const error = await readEduVpnDeployment(location).then(
    async (reader) => {
      await reader.close();
      return null;
    },
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof EduVpnReadError, `expected an EduVpnReadError, got ${String(error)}`);
  return error.message;
}

test('every kind of record is read back from MariaDB, TINYINT(1) flags as booleans and BIGINTs as numbers', async (t) => {
  const deployment = await written(t);
  const reader = await opened(t, deployment);
  assert.equal(reader.schemaVersion, '2023011801');
  const password = decodeURIComponent(new URL(deployment.location.database).password);
  assert.match(reader.description, /^mysql:\/\/vpn_[0-9a-f]+:\*\*\*@127\.0\.0\.1:\d+\/eduvpn_[0-9a-f]+ /);
  assert.ok(!reader.description.includes(password), 'the description shows no password');

  const users = (await pages(reader.users())).flat();
  assert.deepEqual(
    users.map((user) => [user.userId, user.isDisabled, user.permissionList]),
    [
      ['alice', false, '["staff"]'],
      ['bob', true, '[]'],
      ['carol', false, '[]'],
    ],
  );
  const peers = (await pages(reader.wireGuardPeers())).flat();
  assert.deepEqual(
    peers.map((peer) => [peer.publicKey, peer.userId, peer.nodeNumber, peer.ipFour, peer.ipSix, peer.authKey]).sort(),
    deployment.configurations
      .filter((each) => each.protocol === 'wireguard')
      .map((each) => [each.connectionId, each.userId, each.nodeNumber, each.ipFour, each.ipSix, each.authKey])
      .sort(),
  );
  assert.ok(peers.every((peer) => peer.nodeNumber === 0));
  const certificates = (await pages(reader.certificates())).flat();
  assert.deepEqual(
    certificates.map((each) => [each.commonName, each.userId, each.profileId, each.authKey]),
    deployment.configurations
      .filter((each) => each.protocol === 'openvpn')
      .map((each) => [each.connectionId, each.userId, each.profileId, null]),
  );
  assert.deepEqual(
    (await pages(reader.authorizations())).flat().map((each) => [each.authKey, each.userId, each.clientId]),
    [['auth-bob-1', 'bob', 'org.eduvpn.app.android']],
  );
  const log = (await pages(reader.connectionLog())).flat();
  assert.deepEqual(
    log.map((entry) => entry.connectionId),
    deployment.configurations.map((each) => each.connectionId),
  );
  assert.equal(log[0]?.bytesIn, 123_456);
  assert.equal(typeof log[0]?.bytesOut, 'number');
  assert.deepEqual(
    (await pages(reader.dailyStatistics())).flat().map((each) => [each.profileId, each.maxConnectionCount]),
    [
      ['office', 10],
      ['office', 11],
    ],
  );
  assert.deepEqual(
    await Promise.all(
      (['users', 'wireGuardPeers', 'certificates', 'authorizations', 'connectionLog', 'dailyStatistics'] as const).map(
        (kind) => reader.count(kind),
      ),
    ),
    [3, 2, 1, 1, 3, 2],
  );
  assert.deepEqual(await reader.leftBehind(), {
    localUsers: 1,
    refreshTokens: 1,
    liveStatistics: 3,
    guestUserCounts: 1,
  });
});

test('schema 2022022201 (eduVPN 3.0 to 3.2) is read from MariaDB, with no guest counts', async (t) => {
  const deployment = await written(t, { schemaVersion: '2022022201' });
  const reader = await opened(t, deployment);
  assert.equal(reader.schemaVersion, '2022022201');
  assert.equal((await pages(reader.dailyStatistics())).flat().length, 2);
  assert.equal((await reader.leftBehind()).guestUserCounts, 0);
});

test('keys that differ in case are each read once, across page boundaries, although MariaDB compares them alike', async (t) => {
  const deployment = await written(t, {
    users: [
      { userId: 'Zoe' },
      { userId: 'adam' },
      { userId: 'Bea' },
      { userId: 'carl' },
      { userId: 'Dora' },
      { userId: 'DORA.2' },
      { userId: 'dora.3' },
    ],
    generated: { users: 5, configurationsPerUser: 2, profileId: 'office', protocol: 'both' },
  });
  const reader = await opened(t, deployment, 2);
  const userPages = await pages(reader.users());
  assert.ok(userPages.every((page) => page.length <= 2));
  const userIds = userPages.flat().map((user) => user.userId);
  assert.equal(userIds.length, 12);
  assert.equal(new Set(userIds).size, 12);
  // MariaDB's order, without regard to case: not JavaScript's.
  assert.deepEqual(
    userIds.filter((id) => !id.startsWith('generated-')),
    ['adam', 'Bea', 'carl', 'Dora', 'DORA.2', 'dora.3', 'Zoe'],
  );
  const peers = (await pages(reader.wireGuardPeers())).flat().map((peer) => peer.publicKey);
  const expectedPeers = deployment.configurations.filter((each) => each.protocol === 'wireguard');
  assert.deepEqual([...peers].sort(), expectedPeers.map((each) => each.connectionId).sort());
  const certificates = (await pages(reader.certificates())).flat().map((each) => each.commonName);
  assert.equal(new Set(certificates).size, deployment.configurations.length - expectedPeers.length);
  const logPages = await pages(reader.connectionLog());
  assert.ok(logPages.every((page) => page.length <= 2));
  assert.deepEqual(
    logPages.flat().map((entry) => entry.connectionId),
    deployment.configurations.map((each) => each.connectionId),
    'the connection log comes in the order it was written, each entry once',
  );
});

test('a row of a table without a key that does not parse is named by its place in the table', async (t) => {
  const deployment = await written(t);
  const [, second] = deployment.configurations;
  assert.ok(second !== undefined);
  await runOnEduVpnDatabase(
    deployment.location.database,
    `UPDATE connection_log SET connected_at = 'yesterday' WHERE connection_id = '${second.connectionId}'`,
  );
  const reader = await opened(t, deployment, 1);
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const page of reader.connectionLog()) seen.push(...page.map((entry) => entry.connectionId));
    })(),
    new EduVpnReadError(
      'table connection_log, row number 2: field connected_at: not an ATOM timestamp (YYYY-MM-DDTHH:MM:SS+00:00)',
    ),
  );
  assert.deepEqual(seen, [deployment.configurations[0]?.connectionId]);
  // The reader is still usable after the broken read.
  assert.equal(await reader.count('connectionLog'), 3);
});

test('an unknown schema version, or no version table, is refused from MariaDB naming the versions known', async (t) => {
  const unknown = await written(t, { versionRows: ['2024060101'] });
  const message = await refusal(unknown.location);
  assert.match(
    message,
    /schema version 2024060101, which this reader does not know \(it knows 2022022201, 2023011801\)/,
  );
  const noVersion = await written(t);
  await runOnEduVpnDatabase(noVersion.location.database, 'DROP TABLE version');
  assert.match(await refusal(noVersion.location), /no table "version": not an eduVPN 3\.x database/);
});

test('a wrong password or a MariaDB URL that does not parse is refused without repeating the password', async (t) => {
  const deployment = await written(t);
  const url = new URL(deployment.location.database);
  url.password = 'not-the-Password-42';
  const wrongPassword = await refusal({ ...deployment.location, database: url.href });
  assert.match(
    wrongPassword,
    /^cannot read mysql:\/\/vpn_[0-9a-f]+:\*\*\*@127\.0\.0\.1:\d+\/eduvpn_[0-9a-f]+: Access denied/,
  );
  assert.ok(!wrongPassword.includes('not-the-Password-42'));
  const badParameter = await refusal({ ...deployment.location, database: `${url.href}?sslmode=off` });
  assert.equal(
    badParameter,
    'the eduVPN database has parameter "sslmode"; a MariaDB/MySQL URL may have only socket, charset',
  );
});
