// The move from eduVPN, as an administrator makes it, proven with the files eduVPN issued: an
// eduVPN 3.x deployment written the way eduVPN writes it (test/support/eduvpn-deployment.ts:
// its database, CA, tls-crypt keys, the node's WireGuard key and the client files) is read by
// `vpn-portal import eduvpn`, first as a dry run, then for real; this portal and its node agent
// start in the tunnel lab on what was imported, and the OLD files, unchanged, connect with
// wg-quick and openvpn. A user disabled before the move stays disabled; `destroy` removes an
// imported user's peer from the node. The time from the agent's start to the first answer through
// each tunnel is what a device sees of the node's switch (docs/moving-from-eduvpn.md).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { PortalConfigFile, ProfileConfigFile } from '../../src/config/schema.js';
import { parseDatabaseLocation } from '../../src/config/database-location.js';
import { COPIED_TABLES } from '../../src/storage/copy.js';
import { connectDatabase } from '../../src/storage/database.js';
import {
  type EduVpnDeploymentSpec,
  type EduVpnIssuedConfiguration,
  writeEduVpnDeployment,
  type WrittenEduVpnDeployment,
} from '../support/eduvpn-deployment.js';
import type { LabAddresses } from '../support/tunnel-lab.js';
import { CONNECTED, AUTH_FAILED, OpenVpnClient } from '../support/openvpn-client.js';
import { runCli, type CliResult } from '../support/portal-process.js';
import { createTestDatabase, dropTestDatabase } from '../support/postgres.js';
import { testPortalConfigFile } from '../support/test-portal.js';
import { startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

/** WireGuard and OpenVPN; the WireGuard gateway is the first host of the range. */
const EMPLOYEES = 'employees';
const EMPLOYEES_GATEWAY = '198.19.44.1';
/** WireGuard only. */
const GUESTS = 'guests';
const GUESTS_GATEWAY = '198.19.45.1';
const RANGES = {
  [EMPLOYEES]: {
    wRangeFour: '198.19.44.0/24',
    wRangeSix: 'fd00:44::/64',
    // One UDP and one TCP process on port 1194: the /24 is split into two /25.
    oRangeFour: '198.19.60.0/24',
    oRangeSix: 'fd00:60::/64',
  },
  [GUESTS]: { wRangeFour: '198.19.45.0/24', wRangeSix: 'fd00:45::/64' },
} as const;
const DISPLAY_NAMES = { [EMPLOYEES]: 'Employees', [GUESTS]: 'Guests' } as const;
const PROFILE_IDS = [EMPLOYEES, GUESTS] as const;

/** The profiles in this portal.json: eduVPN's, under the same names (the old files name the node's address). */
function portalProfiles(addresses: LabAddresses): ProfileConfigFile[] {
  return PROFILE_IDS.map((profileId) => ({
    profileId,
    displayName: DISPLAY_NAMES[profileId],
    hostName: addresses.nodeAddressForClient,
    nodeUrl: `http://${addresses.nodeAddressForPortal}:41194`,
    defaultGateway: false,
    ...RANGES[profileId],
  }));
}

/**
 * The eduVPN deployment before the move: two profiles on node 0, whose host name is the node's
 * address in the lab; alice has a WireGuard file, bob an OpenVPN file, carol (disabled) one of
 * each, dave a configuration an app holds (no file) and a password for the user portal.
 */
function eduVpnSpec(addresses: LabAddresses, postgresUrl: string | undefined): EduVpnDeploymentSpec {
  const node = { nodeNumber: 0, hostName: addresses.nodeAddressForClient };
  return {
    ...(postgresUrl === undefined ? {} : { postgresUrl }),
    profiles: PROFILE_IDS.map((profileId) => ({
      profileId,
      displayName: DISPLAY_NAMES[profileId],
      nodes: [{ ...node, ...RANGES[profileId] }],
      defaultGateway: false,
    })),
    users: [
      { userId: 'alice', configurations: [{ protocol: 'wireguard', profileId: EMPLOYEES, displayName: 'Laptop' }] },
      { userId: 'bob', configurations: [{ protocol: 'openvpn', profileId: EMPLOYEES, displayName: 'Phone' }] },
      {
        userId: 'carol',
        disabled: true,
        configurations: [
          { protocol: 'wireguard', profileId: GUESTS, displayName: 'Tablet' },
          { protocol: 'openvpn', profileId: EMPLOYEES, displayName: 'Desktop' },
        ],
      },
      {
        userId: 'dave',
        localPassword: true,
        authorizations: [{ authKey: 'dave-linux-app' }],
        configurations: [{ protocol: 'wireguard', profileId: GUESTS, authKey: 'dave-linux-app' }],
      },
    ],
  };
}

/** The configuration eduVPN issued to `userId` over `protocol`, with its file. */
function issued(
  deployment: WrittenEduVpnDeployment,
  userId: string,
  protocol: 'wireguard' | 'openvpn',
): EduVpnIssuedConfiguration & { readonly file: string } {
  const found = deployment.configurations.find((each) => each.userId === userId && each.protocol === protocol);
  assert.ok(found?.file != null, `eduVPN issued ${userId} a ${protocol} file`);
  return { ...found, file: found.file };
}

describe('an eduVPN deployment moves here and the files eduVPN issued connect unchanged', () => {
  let folder: string;
  let lab: TunnelLab;
  let eduVpn: WrittenEduVpnDeployment;
  let portalConfigFile: string;
  let dataDir: string;
  let database: string;
  let dropDatabases: () => Promise<void> = async () => {};
  const runs: { dryRun?: CliResult; rowsAfterDryRun?: TableRows; first?: CliResult; second?: CliResult } = {};
  let rowsAfterFirst: TableRows = {};
  let rowsAfterSecond: TableRows = {};
  const openVpnClients: OpenVpnClient[] = [];

  const importArguments = (): string[] => [
    'import',
    'eduvpn',
    '--config',
    portalConfigFile,
    '--eduvpn-config',
    eduVpn.location.configDir,
    '--eduvpn-data',
    eduVpn.location.dataDir,
    '--eduvpn-database',
    eduVpn.location.database,
    ...[...eduVpn.location.nodeWireGuardKeyFiles].flatMap(([node, file]) => [
      '--node-wireguard-key',
      `${node}=${file}`,
    ]),
  ];

  /** Writes an old file into the lab's folder, exactly as eduVPN issued it (0600: it holds a key). */
  const keepFile = async (name: string, text: string): Promise<string> => {
    const path = join(lab.directory, name);
    await writeFile(path, text, { mode: 0o600 });
    return path;
  };
  const wireGuardUp = async (text: string): Promise<string> => {
    const interfaceName = lab.lab.interfaceName('wgc');
    const file = await keepFile(`${interfaceName}.conf`, text);
    await lab.client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });
    return file;
  };
  const openVpnStart = async (name: string, text: string): Promise<{ client: OpenVpnClient; tun: string }> => {
    const file = await keepFile(`${name}.ovpn`, text);
    // The file says `dev tun`; the device name is pinned only so the test can read its addresses.
    const tun = lab.lab.interfaceName('tun');
    const client = new OpenVpnClient(lab.client, file, ['--dev', tun]);
    openVpnClients.push(client);
    return { client, tun };
  };
  const tunnelAddresses = async (device: string): Promise<string[]> => {
    const { stdout } = await lab.client.exec('ip', ['-o', 'address', 'show', 'dev', device, 'scope', 'global']);
    return [...stdout.matchAll(/inet6? ([0-9a-f.:]+)\//g)].map((match) => match[1] ?? '');
  };

  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'eduvpn-move-'));
    dataDir = join(folder, 'data');
    const server = process.env['TEST_DATABASE_URL'];
    let eduVpnDatabase: string | undefined;
    database = `sqlite:${join(dataDir, 'db.sqlite')}`;
    if (server !== undefined && server !== '') {
      // Both on PostgreSQL: eduVPN's database and this portal's, on the pass's server.
      const ours = await createTestDatabase(server);
      const theirs = await createTestDatabase(server);
      database = ours.url;
      eduVpnDatabase = theirs.url;
      dropDatabases = async () => {
        await dropTestDatabase(server, ours.name);
        await dropTestDatabase(server, theirs.name);
      };
    }
    lab = await startTunnelLab({
      dataDir,
      database,
      startAgent: false,
      portalConfig: (addresses) => ({ reconcileInterval: 'PT3S', ProfileList: portalProfiles(addresses) }),
      beforePortal: async (portalConfig, addresses) => {
        eduVpn = await writeEduVpnDeployment(join(folder, 'eduvpn'), eduVpnSpec(addresses, eduVpnDatabase));
        portalConfigFile = join(folder, 'portal.json');
        const config: PortalConfigFile = testPortalConfigFile(portalConfig, dataDir, database);
        await writeFile(portalConfigFile, JSON.stringify(config));
        runs.dryRun = await runCli([...importArguments(), '--dry-run']);
        runs.rowsAfterDryRun = await portalRows(database, folder);
        runs.first = await runCli(importArguments());
        rowsAfterFirst = await portalRows(database, folder);
        runs.second = await runCli(importArguments());
        rowsAfterSecond = await portalRows(database, folder);
      },
    });
  });

  after(async () => {
    try {
      for (const client of openVpnClients) await client.stop();
      await lab?.close();
    } finally {
      await dropDatabases();
      await rm(folder, { recursive: true, force: true });
    }
  });

  test('the dry run counts what it would bring, finds no conflicts and changes nothing', () => {
    const dryRun = runs.dryRun;
    assert.ok(dryRun !== undefined, 'the dry run ran');
    assert.equal(dryRun.code, 0, `${dryRun.stdout}${dryRun.stderr}`);
    assert.match(dryRun.stdout, /schema version 2023011801/, 'it names the schema version it found');
    // Columns: to bring, already here, conflicting, expired.
    for (const [records, toBring] of [
      ['users', 4],
      ['OAuth authorizations', 1],
      ['WireGuard configurations', 3],
      ['OpenVPN configurations', 2],
      ['connection log entries', 5],
      ['daily statistics', 4],
    ] as const) {
      assert.match(dryRun.stdout, new RegExp(`^${records} +${toBring} +0 +0 +0 *$`, 'm'), dryRun.stdout);
    }
    assert.match(dryRun.stdout, /left behind: 1 local passwords, 1 app refresh tokens/, dryRun.stdout);
    assert.doesNotMatch(dryRun.stdout, /conflicts/, dryRun.stdout);
    assert.deepEqual(runs.rowsAfterDryRun, {}, 'no table of this portal holds a row after the dry run');
  });

  test('the import brings every configuration, and a second import changes nothing', () => {
    assert.equal(runs.first?.code, 0, `${runs.first?.stdout}${runs.first?.stderr}`);
    const imported = (table: string) =>
      (rowsAfterFirst[table] ?? []).map((row) => (row as Record<string, unknown>)['user_id']).sort();
    assert.deepEqual(imported('users'), ['alice', 'bob', 'carol', 'dave']);
    assert.deepEqual(imported('wg_peers'), ['alice', 'carol', 'dave']);
    assert.deepEqual(imported('certificates'), ['bob', 'carol']);
    // The keys the old files depend on are the ones this portal now serves with.
    const keyFile = (name: string) => readFileSync(join(dataDir, 'keys', name), 'utf8').trim();
    assert.equal(keyFile('wireguard.0.key'), eduVpn.nodeWireGuardKeys.get(0)?.privateKey, "the node's WireGuard key");
    assert.equal(keyFile('ca/ca.crt'), eduVpn.caCertificatePem.trim(), 'the OpenVPN CA');
    assert.equal(keyFile('node.0.key'), eduVpn.nodeKeys.get(0), 'the node secret');
    assert.equal(runs.second?.code, 0, `${runs.second?.stdout}${runs.second?.stderr}`);
    assert.match(runs.second?.stdout ?? '', /nothing to do/);
    assert.deepEqual(rowsAfterSecond, rowsAfterFirst, 'the second import left every row as the first made it');
  });

  test('after the switch the old WireGuard and OpenVPN files connect, unchanged, through the node agent', async (t) => {
    // The devices had their tunnels up when the old node stopped: they wait for a node that answers.
    await wireGuardUp(issued(eduVpn, 'alice', 'wireguard').file);
    const bob = await openVpnStart('bob', issued(eduVpn, 'bob', 'openvpn').file);
    const switched = performance.now();
    const since = (): number => (performance.now() - switched) / 1000;
    await lab.startAgent();
    const [wireGuardSeconds, openVpnSeconds] = await Promise.all([
      lab.ping(90, EMPLOYEES_GATEWAY).then((answered) => {
        assert.ok(answered, 'a ping through the old WireGuard file is answered');
        return since();
      }),
      bob.client.waitFor(CONNECTED, 'Initialization Sequence Completed', 90_000).then(since),
    ]);
    const [ipFour] = await tunnelAddresses(bob.tun);
    assert.ok(ipFour !== undefined, 'the OpenVPN tunnel has an IPv4 address');
    const gateway = Number(ipFour.split('.')[3]) < 128 ? '198.19.60.1' : '198.19.60.129';
    const ping = await lab.client.run('ping', ['-c', '1', '-i', '0.5', '-w', '10', gateway]);
    assert.equal(ping.exitCode, 0, `ping through the old OpenVPN file: ${ping.stdout}${ping.stderr}`);
    // What a device sees of the switch (docs/moving-from-eduvpn.md writes these figures down).
    t.diagnostic(
      `from the agent's start: WireGuard answers after ${wireGuardSeconds.toFixed(1)} s, OpenVPN connects after ${openVpnSeconds.toFixed(1)} s (load average ${loadavg()[0]?.toFixed(1)})`,
    );
  });

  test('connection_list lists both connections under the users they were issued to', async () => {
    const alice = issued(eduVpn, 'alice', 'wireguard');
    const bob = issued(eduVpn, 'bob', 'openvpn');
    await until(
      'the WireGuard handshake is listed',
      async () =>
        ((await lab.portal.admin.connectionList())[EMPLOYEES] ?? []).some(
          (entry) => entry.connection_id === alice.connectionId,
        ),
      30_000,
    );
    const listed = ((await lab.portal.admin.connectionList())[EMPLOYEES] ?? [])
      .map((entry) => [entry.user_id, entry.vpn_proto, entry.connection_id, entry.display_name])
      .sort();
    assert.deepEqual(listed, [
      ['alice', 'wireguard', alice.connectionId, 'Laptop'],
      ['bob', 'openvpn', bob.connectionId, 'Phone'],
    ]);
    assert.deepEqual(await lab.portal.admin.connectedUsers(), { [EMPLOYEES]: ['alice', 'bob'], [GUESTS]: [] });
  });

  test('the user disabled before the move stays disabled and its old files do not connect', async () => {
    const wireGuard = issued(eduVpn, 'carol', 'wireguard');
    assert.deepEqual(await lab.portal.admin.disabledUsers(), ['carol']);
    const peers = await lab.peersOnNode();
    assert.ok(peers.has(issued(eduVpn, 'alice', 'wireguard').connectionId), "an enabled user's peer is on the node");
    assert.equal(peers.has(wireGuard.connectionId), false, "the disabled user's peer is not");
    await wireGuardUp(wireGuard.file);
    assert.equal(await lab.ping(5, GUESTS_GATEWAY), false, 'no answer through her old WireGuard file');
    const device = await openVpnStart('carol', issued(eduVpn, 'carol', 'openvpn').file);
    await device.client.waitFor(AUTH_FAILED, 'AUTH_FAILED', 60_000);
    await device.client.stop();
  });

  test('destroy of an imported user removes its peer from the node and its old file stops working', async () => {
    const alice = issued(eduVpn, 'alice', 'wireguard');
    assert.ok(await lab.ping(10, EMPLOYEES_GATEWAY), 'her old file works before');
    await lab.portal.admin.destroy('alice');
    await until('her peer is gone from the node', async () => !(await lab.peersOnNode()).has(alice.connectionId));
    assert.equal(await lab.ping(3, EMPLOYEES_GATEWAY), false, 'no answer through her old file');
    assert.equal((await lab.portal.admin.users()).includes('alice'), false, 'she is no longer a user');
  });
});

type TableRows = Record<string, readonly unknown[]>;

/**
 * Every row of this portal's tables that hold any, by table; tables not made yet count as empty.
 * Bookkeeping tables (listing counters, portal state) are left out: the migrations that any
 * command opening the database applies fill them, and they hold no record of the deployment.
 */
async function portalRows(database: string, baseDir: string): Promise<TableRows> {
  const location = parseDatabaseLocation(database, baseDir);
  // Not opened when it is not there: opening an SQLite file makes it.
  if (location.dialect === 'sqlite' && !existsSync(location.path)) return {};
  const db = connectDatabase(location);
  try {
    const existing = new Set((await db.introspection.getTables()).map((table) => table.name));
    const rows: Record<string, readonly unknown[]> = {};
    for (const { table, key, bookkeeping } of COPIED_TABLES) {
      if (bookkeeping === true || !existing.has(table)) continue;
      const order = sql.join(key.map((column) => sql.ref(column)));
      const found = (
        await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by ${order}`.execute(db)
      ).rows;
      if (found.length > 0) rows[table] = found;
    }
    return rows;
  } finally {
    await db.destroy();
  }
}
