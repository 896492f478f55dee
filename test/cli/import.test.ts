// `vpn-portal import eduvpn` as an administrator runs it, against an eduVPN deployment the
// fixture writes as eduVPN lays it out (SQLite, and PostgreSQL on the PostgreSQL pass, for
// eduVPN's database and the portal's; and eduVPN's database in MariaDB): the dry run prints the
// plan and changes nothing, the import brings everything, a second run has nothing to do, and a
// portal started on the result knows eduVPN's users under eduVPN's Admin API secret; a user
// destroyed there stays out of a run again, which says so, also once its destroy receipt went. A portal with keys of its own refuses
// with the conflicts; mistakes on the command line are usage errors.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import {
  eduVpnDatabaseOfPass,
  writeEduVpnDeployment,
  type WrittenEduVpnDeployment,
} from '../support/eduvpn-deployment.js';
import { runCli } from '../support/portal-process.js';
import { createTestDatabase, dropTestDatabase } from '../support/postgres.js';
import { parseDatabaseLocation } from '../../src/config/database-location.js';
import { connectDatabase, migrateUpTo, migrationStatus } from '../../src/storage/database.js';
import { startPrivateMariadb } from '../support/private-mariadb.js';
import { defaultTestConfig, startTestPortal, UNREACHABLE_NODE } from '../support/test-portal.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';

type TestContext = { after: (fn: () => Promise<void> | void) => void };

const PROFILE_LIST = [
  {
    profileId: 'office',
    displayName: 'Office',
    hostName: ['vpn0.example.org', 'vpn1.example.org'],
    onNode: [0, 1],
    nodeUrl: [UNREACHABLE_NODE, UNREACHABLE_NODE],
    wRangeFour: ['10.60.0.0/24', '10.61.0.0/24'],
    wRangeSix: ['fd60::/64', 'fd61::/64'],
    oRangeFour: ['10.70.0.0/24', '10.71.0.0/24'],
    oRangeSix: ['fd70::/64', 'fd71::/64'],
  },
];

/**
 * An eduVPN deployment (its database on this pass, or in MariaDB at `mysqlUrl`), a data folder
 * and portal.json for the portal (its database on this pass).
 */
async function setUp(
  t: TestContext,
  eduVpnDatabase?: { readonly mysqlUrl: string },
  statisticsDays?: number,
): Promise<{ deployment: WrittenEduVpnDeployment; dataDir: string; configFile: string; database: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'vpn-portal-import-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const deployment = await writeEduVpnDeployment(path.join(dir, 'eduvpn'), {
    ...(eduVpnDatabase ?? (await eduVpnDatabaseOfPass(t))),
    ...(statisticsDays === undefined ? {} : { statisticsDays }),
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
          { nodeNumber: 1, hostName: 'vpn1.example.org', wRangeFour: '10.61.0.0/24', wRangeSix: 'fd61::/64' },
        ],
      },
    ],
    users: [
      {
        userId: 'alice',
        configurations: [
          { protocol: 'wireguard', profileId: 'office' },
          { protocol: 'openvpn', profileId: 'office' },
        ],
      },
      {
        userId: 'bob',
        disabled: true,
        configurations: [{ protocol: 'wireguard', profileId: 'office', nodeNumber: 1 }],
      },
      { userId: 'carol', localPassword: true },
    ],
  });
  const dataDir = path.join(dir, 'portal');
  const server = process.env['TEST_DATABASE_URL'];
  let database = `sqlite:${path.join(dataDir, 'portal.sqlite')}`;
  if (server !== undefined && server !== '') {
    const created = await createTestDatabase(server);
    t.after(() => dropTestDatabase(server, created.name));
    database = created.url;
  }
  const configFile = path.join(dir, 'portal.json');
  writeFileSync(configFile, JSON.stringify({ ...defaultTestConfig, dataDir, database, ProfileList: PROFILE_LIST }));
  return { deployment, dataDir, configFile, database };
}

function importArgs(deployment: WrittenEduVpnDeployment, configFile: string, ...more: string[]): string[] {
  const { location } = deployment;
  return [
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
    ...more,
  ];
}

/** The portal's migrations applied to `database` (none when the file or database is not there). */
async function appliedMigrations(database: string): Promise<string[]> {
  const location = parseDatabaseLocation(database, '/');
  if (location.dialect === 'sqlite' && !existsSync(location.path)) return [];
  const db = connectDatabase(location);
  try {
    return (await migrationStatus(db)).filter((migration) => migration.appliedAt !== null).map(({ name }) => name);
  } finally {
    await db.destroy();
  }
}

/** The dry run, the import and a second run, then a portal on the result. */
async function importsEverything(
  t: TestContext,
  setUpDone: Awaited<ReturnType<typeof setUp>>,
): Promise<{ readonly dryRun: string }> {
  const { deployment, dataDir, configFile, database } = setUpDone;
  const dry = await runCli(importArgs(deployment, configFile, '--dry-run'));
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /schema version 2023011801/);
  assert.match(dry.stdout, /WireGuard configurations\s+2\s+0\s+0\s+0/);
  assert.match(dry.stdout, /left behind: 1 local passwords/);
  assert.equal(existsSync(path.join(dataDir, 'keys', 'admin-api.key')), false, 'the dry run wrote no key');
  assert.deepEqual(await appliedMigrations(database), [], 'nor the database, not even its schema');

  const run = await runCli(importArgs(deployment, configFile));
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stdout,
    /imported: \d+ key files, 3 users, 0 OAuth authorizations, 2 WireGuard configurations, 1 OpenVPN configurations/,
  );
  const secretFile = path.join(dataDir, 'keys', 'admin-api.key');
  assert.equal(readFileSync(secretFile, 'utf8'), deployment.adminApiKey);
  assert.equal(statSync(secretFile).mode & 0o777, 0o600);
  assert.equal(
    readFileSync(path.join(dataDir, 'keys', 'ca', 'ca.crt'), 'utf8').trim(),
    deployment.caCertificatePem.trim(),
  );

  const again = await runCli(importArgs(deployment, configFile));
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /nothing to do: everything is here already/);

  // The portal starts on the result and answers eduVPN's secret with eduVPN's users.
  const portal = await startTestPortal({ dataDir, database, config: { ProfileList: PROFILE_LIST } });
  t.after(() => portal.close());
  assert.equal(portal.secret, deployment.adminApiKey);
  assert.deepEqual((await portal.admin.users()).sort(), ['alice', 'bob', 'carol']);
  assert.deepEqual(await portal.admin.disabledUsers(), ['bob']);
  const aliceFiles = await portal.admin.userConfigurationList('alice');
  assert.deepEqual(
    aliceFiles.map((entry) => entry.connection_id).sort(),
    deployment.configurations
      .filter((configuration) => configuration.userId === 'alice')
      .map((configuration) => configuration.connectionId)
      .sort(),
  );
  return { dryRun: dry.stdout };
}

test('the dry run prints the plan, the import brings it all, and a second run has nothing to do', async (t) => {
  await importsEverything(t, await setUp(t));
});

test('the public key file eduVPN keeps of a node it retired is named as not needed, and the import goes on without that node’s key', async (t) => {
  const setUpDone = await setUp(t);
  const retired = path.join(setUpDone.deployment.location.dataDir, 'keys', 'wireguard.9.public.key');
  writeFileSync(retired, `${'x'.repeat(42)}A=`);
  const { dryRun } = await importsEverything(t, setUpDone);
  assert.match(
    dryRun,
    /^not needed: node 9 WireGuard public key: eduVPN's wireguard\.9\.public\.key names x{42}A=, but no configuration to bring connects to node 9 /m,
  );
  assert.equal(existsSync(path.join(setUpDone.dataDir, 'keys', 'wireguard.9.key')), false);
});

test('a node key given for a node nothing connects to is named as not needed, and the import does not write it', async (t) => {
  const setUpDone = await setUp(t);
  const { location } = setUpDone.deployment;
  const keyFile = path.join(location.dataDir, 'wireguard.8.key');
  writeFileSync(keyFile, `${generateWireGuardKeyPair().privateKey}\n`, { mode: 0o600 });
  const nodeWireGuardKeyFiles = new Map([...location.nodeWireGuardKeyFiles, [asNodeNumber(8), keyFile]]);
  const { dryRun } = await importsEverything(t, {
    ...setUpDone,
    deployment: { ...setUpDone.deployment, location: { ...location, nodeWireGuardKeyFiles } },
  });
  assert.match(
    dryRun,
    /^not needed: node 8 WireGuard private key: given with --node-wireguard-key 8=FILE, but no configuration to bring connects to node 8 /m,
  );
  assert.doesNotMatch(
    dryRun,
    /^(node|warning: node) 8 WireGuard private key/m,
    'neither a key file to bring nor unchecked',
  );
  assert.equal(existsSync(path.join(setUpDone.dataDir, 'keys', 'wireguard.8.key')), false);
});

test('a node key given without eduVPN’s public key file to check it against is printed as a warning that it went unchecked', async (t) => {
  const { deployment, configFile } = await setUp(t);
  rmSync(path.join(deployment.location.dataDir, 'keys', 'wireguard.1.public.key'));
  const dry = await runCli(importArgs(deployment, configFile, '--dry-run'));
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(
    dry.stdout,
    /^warning: node 1 WireGuard private key: eduVPN's files hold no wireguard\.1\.public\.key, so the key given was not checked against the public key the WireGuard files issued for node 1 name /m,
  );
  assert.doesNotMatch(dry.stdout, /^warning: node 0 /m);
});

test('after a destroy here, a run again names the user and its configurations as removed here and brings none of them back, also once the receipt of the destroy was pruned', async (t) => {
  // Without daily statistics: the portal's start-up housekeeping aggregates yesterday itself, and
  // its figures for that day would differ from eduVPN's, a conflict that is not this test's.
  const { deployment, dataDir, configFile, database } = await setUp(t, undefined, 0);
  const first = await runCli(importArgs(deployment, configFile));
  assert.equal(first.code, 0, first.stderr);
  const portal = await startTestPortal({ dataDir, database, config: { ProfileList: PROFILE_LIST } });
  t.after(() => portal.close());
  assert.notEqual(await portal.admin.destroy('alice'), null);

  const dry = await runCli(importArgs(deployment, configFile, '--dry-run'));
  assert.equal(dry.code, 0, `${dry.stdout}${dry.stderr}`);
  assert.match(
    dry.stdout,
    /^left because revoked here or refused by eduVPN \(a revocation is final\): 1 users, 1 WireGuard configurations, 1 OpenVPN configurations$/m,
  );
  assert.match(dry.stdout, /^ {2}users alice: brought by an import at \S+ and destroyed here since$/m);
  const again = await runCli(importArgs(deployment, configFile));
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /nothing to do: everything is here already or was removed here \(3 left, listed above\)/);
  assert.deepEqual((await portal.admin.users()).sort(), ['bob', 'carol']);

  // A year on (auditLogRetention) the receipt goes, and with the next housekeeping the import's
  // note naming alice: the destroy still holds.
  const { db } = portal.portal.ctx;
  const receipts = await db.selectFrom('revocations').select('revocation_id').where('user_id', '=', 'alice').execute();
  const receiptIds = receipts.map((receipt) => receipt.revocation_id);
  await db.deleteFrom('revocation_nodes').where('revocation_id', 'in', receiptIds).execute();
  await db.deleteFrom('revocations').where('revocation_id', 'in', receiptIds).execute();
  await db.deleteFrom('portal_state').where('key', '=', 'housekeeping.day').execute();
  await portal.reconcile();
  const later = await runCli(importArgs(deployment, configFile));
  assert.equal(later.code, 0, later.stderr);
  assert.match(later.stdout, /^ {2}users alice: destroyed here at \S+$/m);
  assert.match(later.stdout, /nothing to do: everything is here already or was removed here \(3 left, listed above\)/);
  assert.deepEqual((await portal.admin.users()).sort(), ['bob', 'carol']);
});

test('a dry run refuses a portal database of an older version, and leaves it at that version', async (t) => {
  const { deployment, configFile, database } = await setUp(t);
  const older = connectDatabase(parseDatabaseLocation(database, '/'));
  try {
    await migrateUpTo(older, '0020-listing-changes');
  } finally {
    await older.destroy();
  }
  const applied = await appliedMigrations(database);
  assert.equal(applied.at(-1), '0020-listing-changes');

  const dry = await runCli(importArgs(deployment, configFile, '--dry-run'));
  assert.equal(dry.code, 2, dry.stderr);
  assert.match(
    dry.stderr,
    /the database .* has \d+ of this version's schema changes still to apply; the dry run changes nothing/,
  );
  assert.deepEqual(await appliedMigrations(database), applied);
});

test('an eduVPN database in MariaDB is imported the same way, named by a mysql:// URL', async (t) => {
  const mariadb = await startPrivateMariadb();
  t.after(() => mariadb.stop());
  const { url } = await mariadb.createDatabase();
  const { dryRun } = await importsEverything(t, await setUp(t, { mysqlUrl: url }));
  const password = decodeURIComponent(new URL(url).password);
  assert.match(dryRun, /eduVPN deployment: mysql:\/\/vpn_[0-9a-f]+:\*\*\*@127\.0\.0\.1:\d+\/eduvpn_[0-9a-f]+ /);
  assert.ok(!dryRun.includes(password), 'the plan shows no password');
});

test('the eduVPN database password can come from a file only its owner reads, not the command line', async (t) => {
  const mariadb = await startPrivateMariadb();
  t.after(() => mariadb.stop());
  const { url } = await mariadb.createDatabase();
  const { deployment, configFile } = await setUp(t, { mysqlUrl: url });
  const withoutPassword = new URL(url);
  const password = decodeURIComponent(withoutPassword.password);
  withoutPassword.password = '';
  const passwordFile = path.join(path.dirname(configFile), 'eduvpn-database-password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  const args = (...more: string[]) =>
    importArgs(deployment, configFile, '--eduvpn-database', withoutPassword.href, '--dry-run', ...more);

  const fromFile = await runCli(args('--eduvpn-database-password-file', passwordFile));
  assert.equal(fromFile.code, 0, fromFile.stderr);
  assert.match(fromFile.stdout, /eduVPN deployment: mysql:\/\/vpn_[0-9a-f]+:\*\*\*@/);

  const noPassword = await runCli(args());
  assert.equal(noPassword.code, 2, 'without the file the server refuses the user');
  chmodSync(passwordFile, 0o644);
  const loose = await runCli(args('--eduvpn-database-password-file', passwordFile));
  assert.equal(loose.code, 2);
  assert.match(loose.stderr, /--eduvpn-database-password-file: .* is readable by others \(mode 0644\); chmod 600 it/);
  for (const run of [fromFile, noPassword, loose]) assert.ok(!`${run.stdout}${run.stderr}`.includes(password));
});

test('a portal whose own keys differ refuses the import, lists the conflicts and writes nothing', async (t) => {
  const { deployment, dataDir, configFile, database } = await setUp(t);
  // generate-secrets made a CA, node secrets and WireGuard keys of this portal's own.
  const portal = await startTestPortal({ dataDir, database, config: { ProfileList: PROFILE_LIST } });
  t.after(() => portal.close());
  const run = await runCli(importArgs(deployment, configFile));
  assert.equal(run.code, 1, run.stdout);
  assert.match(run.stdout, /conflicts:/);
  assert.match(run.stdout, /OpenVPN CA here is another key than eduVPN's/);
  assert.match(run.stderr, /import refused: \d+ conflicts/);
  assert.deepEqual(await portal.admin.users(), []);
});

test("a row eduVPN's database has that cannot be read is named in one line, by the dry run and the import, and nothing is written", async (t) => {
  const { deployment, configFile, database } = await setUp(t);
  // A hand edit gave a configuration an expiry on a day the calendar does not have.
  const eduVpn = connectDatabase(parseDatabaseLocation(deployment.location.database, '/'));
  try {
    await sql`UPDATE wg_peers SET expires_at = '2027-02-30T10:00:00+00:00'`.execute(eduVpn);
  } finally {
    await eduVpn.destroy();
  }
  for (const [args, stopped] of [
    [importArgs(deployment, configFile, '--dry-run'), 'dry run stopped'],
    [importArgs(deployment, configFile), 'import stopped'],
  ] as const) {
    const run = await runCli([...args]);
    assert.equal(run.code, 1, run.stderr);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0] ?? '', new RegExp(`^${stopped}: .*wg_peers.*expires_at`));
  }
  const portal = await startTestPortal({ database, config: { ProfileList: PROFILE_LIST } });
  t.after(() => portal.close());
  assert.deepEqual(await portal.admin.users(), [], 'the import found the row while planning: nothing was written');
});

test('a mistake on the command line is a usage error', async (t) => {
  const { deployment, configFile } = await setUp(t);
  const unknown = await runCli(importArgs(deployment, configFile, '--everything'));
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /usage: vpn-portal import eduvpn/);
  const badKey = await runCli(importArgs(deployment, configFile, '--node-wireguard-key', 'zero=/tmp/x'));
  assert.equal(badKey.code, 2);
  assert.match(badKey.stderr, /--node-wireguard-key needs N=FILE/);
  const subcommand = await runCli(['import', 'openvpn', '--config', configFile]);
  assert.equal(subcommand.code, 2);
  const missing = await runCli(
    importArgs(deployment, configFile, '--eduvpn-database', `sqlite:${path.join(tmpdir(), 'no-such-eduvpn.sqlite')}`),
  );
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /import eduvpn: /);
  const passwordForSqlite = await runCli(
    importArgs(
      deployment,
      configFile,
      '--eduvpn-database',
      `sqlite:${path.join(tmpdir(), 'no-such-eduvpn.sqlite')}`,
      '--eduvpn-database-password-file',
      configFile,
    ),
  );
  assert.equal(passwordForSqlite.code, 2);
  assert.match(passwordForSqlite.stderr, /--eduvpn-database-password-file goes with a postgres:\/\/ or mysql:\/\//);
});
