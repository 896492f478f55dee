// eduVPN on MariaDB compares user ids without regard to case, its foreign keys too: a
// configuration whose user_id differs in case from its user's row (`create user_id=ALICE` for
// an existing `alice`, or a login typed in another case) is that user's there, and eduVPN
// serves it (and refuses it once that user is disabled). The import brings such a
// configuration to that user; it must not pass the dry run and then fail halfway with a
// database error. The history eduVPN writes of it (connection_log, no
// foreign key) is that user's too, and must be found as hers here: her history, and what a legal
// hold on her keeps from the retention.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { runOnEduVpnDatabase } from '../support/eduvpn-database.js';
import { writeEduVpnDeployment } from '../support/eduvpn-deployment.js';
import { runCli } from '../support/portal-process.js';
import { startPrivateMariadb } from '../support/private-mariadb.js';
import { defaultTestConfig, UNREACHABLE_NODE } from '../support/test-portal.js';

const PROFILE_LIST = [
  {
    profileId: 'office',
    displayName: 'Office',
    hostName: 'vpn0.example.org',
    nodeUrl: UNREACHABLE_NODE,
    wRangeFour: '10.60.0.0/24',
    wRangeSix: 'fd60::/64',
    oRangeFour: '10.70.0.0/24',
    oRangeSix: 'fd70::/64',
  },
];

test('a configuration whose user_id differs in case from its user (MariaDB) is brought to that user, its history too; a deleted user’s history is brought as written', async (t) => {
  const mariadb = await startPrivateMariadb();
  t.after(() => mariadb.stop());
  const { url } = await mariadb.createDatabase();
  const dir = await mkdtemp(path.join(tmpdir(), 'vpn-portal-import-case-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const deployment = await writeEduVpnDeployment(path.join(dir, 'eduvpn'), {
    mysqlUrl: url,
    profiles: [
      {
        profileId: 'office',
        nodes: [
          {
            nodeNumber: 0,
            hostName: 'vpn0.example.org',
            wRangeFour: '10.60.0.0/24',
            wRangeSix: 'fd60::/64',
            oRangeFour: '10.70.0.0/24',
            oRangeSix: 'fd70::/64',
          },
        ],
      },
    ],
    users: [{ userId: 'alice', configurations: [{ protocol: 'wireguard', profileId: 'office' }] }],
  });
  const [peer] = deployment.configurations;
  assert.ok(peer !== undefined);
  // As eduVPN on MariaDB stores it after `create user_id=ALICE`: the foreign key is satisfied,
  // and the history of the configuration names its user_id as written.
  await runOnEduVpnDatabase(
    deployment.location.database,
    `UPDATE wg_peers SET user_id = 'ALICE' WHERE public_key = '${peer.connectionId}'`,
  );
  await runOnEduVpnDatabase(
    deployment.location.database,
    `UPDATE connection_log SET user_id = 'ALICE' WHERE connection_id = '${peer.connectionId}'`,
  );
  // The history of a user eduVPN deleted since (its configurations went with it, the history
  // stays): normal history, brought as written.
  const goneConnection = randomBytes(32).toString('base64');
  await runOnEduVpnDatabase(
    deployment.location.database,
    `INSERT INTO connection_log SELECT 'carol', profile_id, vpn_proto, '${goneConnection}', ip_four, ip_six, connected_at, bytes_in, bytes_out, disconnected_at FROM connection_log WHERE connection_id = '${peer.connectionId}'`,
  );

  const dataDir = path.join(dir, 'portal');
  const configFile = path.join(dir, 'portal.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      ...defaultTestConfig,
      dataDir,
      database: `sqlite:${path.join(dataDir, 'portal.sqlite')}`,
      ProfileList: PROFILE_LIST,
    }),
  );
  const { location } = deployment;
  const args = [
    'import',
    'eduvpn',
    '--config',
    configFile,
    '--eduvpn-config',
    location.configDir,
    '--eduvpn-data',
    location.dataDir,
    '--eduvpn-database',
    location.database,
    ...[...location.nodeWireGuardKeyFiles].flatMap(([node, file]) => ['--node-wireguard-key', `${node}=${file}`]),
  ];
  // Neither is a conflict: the configuration has its user in eduVPN, and so has the history,
  // or it is a deleted user's.
  const dry = await runCli([...args, '--dry-run']);
  assert.equal(dry.code, 0, `the dry run names a conflict:\n${dry.stdout}${dry.stderr}`);
  const run = await runCli(args);
  assert.equal(run.code, 0, `the dry run found nothing wrong, yet the import failed:\n${run.stderr}`);
  const portalDb = new SqliteDatabase(path.join(dataDir, 'portal.sqlite'), { readonly: true });
  t.after(() => portalDb.close());
  assert.deepEqual(
    portalDb.prepare('SELECT user_id FROM wg_peers WHERE public_key = ?').all(peer.connectionId),
    [{ user_id: 'alice' }],
    'the configuration is the user eduVPN matched it to',
  );
  assert.deepEqual(
    portalDb.prepare('SELECT user_id FROM connection_log WHERE connection_id = ?').all(peer.connectionId),
    [{ user_id: 'alice' }],
    'the history is the user eduVPN matched it to',
  );
  assert.deepEqual(
    portalDb.prepare('SELECT user_id FROM connection_log WHERE connection_id = ?').all(goneConnection),
    [{ user_id: 'carol' }],
    'the history of a user eduVPN deleted is brought as written',
  );
});
