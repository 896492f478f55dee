// The whole OpenVPN path with the standard OpenVPN client: the portal runs on the host, the
// node agent (`vpn-portal node`, running one `openvpn` server per port) in namespace "node",
// a managed device in namespace "client". An administrator creates a configuration through
// the Admin API; the device starts `openvpn` with exactly that file and reaches the node
// through the tunnel. Both listing calls show the connection; disabling the user drops it
// and refuses reconnects (its revocation receipt applied at once), enabling lets the same
// file in again; prefer_tcp=yes connects over TCP on a network that drops UDP;
// delete_connection and destroy end connections for good, and the connection history keeps
// every connect and disconnect, which RADIUS accounting reports to a real FreeRADIUS.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { REVOCATION_HEADER } from '../../src/protocol/admin-api.js';
import { connectionHistory } from '../../src/storage/connection-log.js';
import { startFreeRadius, type FreeRadius } from '../support/freeradius.js';
import type { Namespace } from '../support/netns.js';
import { AUTH_FAILED, CONNECTED, OpenVpnClient } from '../support/openvpn-client.js';
import type { TestPortal } from '../support/test-portal.js';
import { startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

const PROFILE = 'staff';
const OPENVPN = 'application/x-openvpn-profile';

describe('a managed device reaches the node through an OpenVPN tunnel made by the portal', () => {
  let lab: TunnelLab;
  let client: Namespace;
  let portal: TestPortal;
  /** A device: its running client, the tun device it uses, and the file it was given. */
  interface Device {
    client: OpenVpnClient;
    tun: string;
    commonName: string;
    file: string;
  }
  let laptop: Device | null = null;
  /** Moves the portal's clock on, so a reconcile pass judges sessions as older than they are. */
  let clockOffsetMs = 0;
  let phone: Device | null = null;

  const assertSuccess = (response: { status: number; text: string }): void => {
    assert.ok(
      response.status >= 200 && response.status < 300,
      `expected success, got ${response.status} ${response.text}`,
    );
  };
  const connectedUsers = (showAll: 'on' | 'off') => portal.admin.connectedUsers(showAll === 'on');
  const connectionList = (showAll: 'on' | 'off') => portal.admin.connectionList(showAll === 'on');
  const listedIds = async (showAll: 'on' | 'off') =>
    ((await connectionList(showAll))[PROFILE] ?? []).map((entry) => entry.connection_id).sort();

  /** The server's tunnel address is the first host of the client's process range (a /25 here). */
  const gatewayOf = (clientIpFour: string): string =>
    Number(clientIpFour.split('.')[3]) < 128 ? '198.19.60.1' : '198.19.60.129';
  const ping = (gateway: string, seconds: number) =>
    client.run('ping', ['-c', '1', '-i', '0.5', '-w', String(seconds), gateway]);
  const tunnelAddresses = async (device: string): Promise<string[]> => {
    const { stdout } = await client.exec('ip', ['-o', 'address', 'show', 'dev', device, 'scope', 'global']);
    return [...stdout.matchAll(/inet6? ([0-9a-f.:]+)\//g)].map((match) => match[1] ?? '');
  };

  /** POST /create for an OpenVPN file; returns the file and the Common Name the portal lists it under. */
  const createFile = async (
    displayName: string,
    extra: Record<string, string> = {},
  ): Promise<{ text: string; commonName: string }> => {
    const created = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: PROFILE, display_name: displayName, ...extra },
      { accept: OPENVPN },
    );
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.get('content-type'), OPENVPN);
    const configurations = await portal.admin.userConfigurationList('alice');
    const made = configurations.find((entry) => entry.display_name === displayName);
    assert.ok(made !== undefined, `user_configuration_list shows "${displayName}": ${JSON.stringify(configurations)}`);
    assert.equal(made.vpn_proto, 'openvpn');
    assert.equal(made.profile_id, PROFILE);
    return { text: created.text, commonName: made.connection_id };
  };

  /** Starts the real OpenVPN client with the file exactly as the portal returned it (0600: it holds a key). */
  const startDevice = async (name: string, file: string): Promise<{ client: OpenVpnClient; tun: string }> => {
    const path = join(lab.directory, `${name}.ovpn`);
    await writeFile(path, file, { mode: 0o600 });
    // The file says `dev tun`; the device name is pinned only so the test can read its addresses.
    const tun = lab.lab.interfaceName('tun');
    return { client: new OpenVpnClient(client, path, ['--dev', tun]), tun };
  };
  const connected = (device: { client: OpenVpnClient }) =>
    device.client.waitFor(CONNECTED, 'Initialization Sequence Completed', 30_000);
  const refused = (device: { client: OpenVpnClient }, timeoutMs = 30_000) =>
    device.client.waitFor(AUTH_FAILED, 'AUTH_FAILED', timeoutMs);

  let radius: FreeRadius;
  let secretFolder: string;

  before(async () => {
    radius = await startFreeRadius();
    secretFolder = await mkdtemp(join(tmpdir(), 'radius-secret-'));
    const secretFile = join(secretFolder, 'radius.secret');
    await writeFile(secretFile, radius.secret, { mode: 0o600 });
    lab = await startTunnelLab({
      clock: { now: () => new Date(Date.now() + clockOffsetMs) },
      portalConfig: {
        reconcileInterval: 'PT3S',
        accounting: { radius: { servers: [{ address: `${radius.host}:${radius.port}`, secretFile }] } },
      },
      profile: {
        profileId: PROFILE,
        displayName: 'Staff',
        wRangeFour: undefined,
        wRangeSix: undefined,
        // One UDP and one TCP server on port 1194: the /24 is split into two /25.
        oRangeFour: '198.19.60.0/24',
        oRangeSix: 'fd00:60::/64',
        oEnableLog: true,
      },
    });
    client = lab.client;
    portal = lab.portal;
    await portal.reconcile();
  });

  after(async () => {
    try {
      await laptop?.client.stop();
      await phone?.client.stop();
    } finally {
      await lab?.close();
      await radius?.close();
      await rm(secretFolder, { recursive: true, force: true });
    }
  });

  test('the device starts openvpn with the file from /create and its pings to the node come back', async () => {
    const { text, commonName } = await createFile('Laptop');
    assert.match(text, /^dev tun\n/, 'the file starts with its first directive, no comments');
    assert.match(text, /\nremote \S+ 1194 udp\nremote \S+ 1194 tcp$/, 'UDP first, then TCP');
    laptop = { ...(await startDevice('laptop', text)), commonName, file: text };
    await connected(laptop);
    const [ipFour] = await tunnelAddresses(laptop.tun);
    assert.ok(ipFour !== undefined, 'the tunnel has an IPv4 address');
    const result = await ping(gatewayOf(ipFour), 10);
    assert.equal(result.exitCode, 0, `ping through the OpenVPN tunnel: ${result.stdout}${result.stderr}`);
  });

  test('both listing calls show the connection with its details, whatever show_all says', async () => {
    assert.ok(laptop !== null, 'the laptop is connected');
    const addresses = await tunnelAddresses(laptop.tun);
    for (const showAll of ['on', 'off'] as const) {
      assert.deepEqual(await connectedUsers(showAll), { [PROFILE]: ['alice'] }, `connected_users show_all=${showAll}`);
      const entries = (await connectionList(showAll))[PROFILE] ?? [];
      assert.equal(entries.length, 1, `connection_list show_all=${showAll}: ${JSON.stringify(entries)}`);
      assert.deepEqual(entries[0], {
        user_id: 'alice',
        connection_id: laptop.commonName,
        display_name: 'Laptop',
        ip_list: addresses,
        vpn_proto: 'openvpn',
        auth_key: null,
      });
    }
    assert.equal(addresses.length, 2, `the device got an IPv4 and an IPv6 address: ${addresses.join(', ')}`);
    // The history lists the open session, from the device's own address.
    const sessions = (await portal.admin.connectionLog({ connection_id: laptop.commonName })).connection_log;
    assert.deepEqual(
      sessions.map((session) => [
        session.vpn_proto,
        session.user_id,
        session.originating_ip,
        session.ip_four,
        session.disconnected_at,
      ]),
      [['openvpn', 'alice', lab.clientAddress, addresses[0], null]],
    );
    // Two minutes on, a reconcile pass finds the session in the node's list of clients: a
    // session is ended as lost only when the node no longer lists it.
    clockOffsetMs = 2 * 60_000;
    try {
      await portal.reconcile();
    } finally {
      // Back to the real clock, by which the rest of the test dates its sessions.
      clockOffsetMs = 0;
    }
    const later = (await portal.admin.connectionLog({ connection_id: laptop.commonName })).connection_log;
    assert.deepEqual(
      later.map((session) => session.disconnected_at),
      [null],
    );
  });

  test('disabling the user drops the tunnel and the reconnect is refused', async () => {
    assert.ok(laptop !== null, 'the laptop is connected');
    const disabled = await portal.post('/disable_user', { user_id: 'alice' });
    assertSuccess(disabled);
    // The node answered the disconnect: the revocation receipt says so at once.
    const receipt = await portal.admin.revocation(disabled.headers.get(REVOCATION_HEADER) ?? '');
    assert.deepEqual(
      [receipt.state, receipt.nodes.map((node) => [node.node_number, node.state, node.connection_ids])],
      ['applied', [[0, 'applied', [laptop.commonName]]]],
    );
    // The node disconnects the client; its automatic reconnect is refused by the portal.
    await refused(laptop);
    assert.deepEqual(await listedIds('on'), []);
    assert.deepEqual(await connectedUsers('off'), { [PROFILE]: [] });
    await laptop.client.stop();
  });

  test('enabling the user lets the same file connect again', async () => {
    assert.ok(laptop !== null, 'the laptop has its file');
    assertSuccess(await portal.post('/enable_user', { user_id: 'alice' }));
    laptop = { ...laptop, ...(await startDevice('laptop', laptop.file)) };
    await connected(laptop);
    const [ipFour] = await tunnelAddresses(laptop.tun);
    assert.equal((await ping(gatewayOf(ipFour ?? ''), 10)).exitCode, 0, 'ping after enable_user');
    assert.deepEqual(await listedIds('off'), [laptop.commonName]);
  });

  test('with prefer_tcp=yes the device connects over TCP on a network that drops UDP', async () => {
    const { text, commonName } = await createFile('Phone', { prefer_tcp: 'yes' });
    assert.match(text, /\nremote \S+ 1194 tcp\nremote \S+ 1194 udp$/, 'TCP first, then UDP');
    await client.exec('nft', ['-f', '-'], {
      stdin: [
        'table inet udp_blocked {',
        `  chain output { type filter hook output priority 0; policy accept; oifname "${lab.clientLinkInterface}" meta l4proto udp counter drop; }`,
        '}',
        '',
      ].join('\n'),
    });
    phone = { ...(await startDevice('phone', text)), commonName, file: text };
    await connected(phone);
    assert.match(phone.client.output, /TCP connection established/, 'the phone connected over TCP');
    const [ipFour] = await tunnelAddresses(phone.tun);
    assert.ok(
      ipFour !== undefined && gatewayOf(ipFour) === '198.19.60.129',
      `the TCP server's range gave the address: ${ipFour}`,
    );
    assert.equal((await ping(gatewayOf(ipFour), 10)).exitCode, 0, 'ping over the TCP tunnel');
    assert.deepEqual(await listedIds('off'), [laptop?.commonName ?? '', commonName].sort());
  });

  test('deleting a connection ends that tunnel for good; the other stays', async () => {
    assert.ok(phone !== null && laptop !== null, 'both devices are connected');
    assertSuccess(await portal.post('/delete_connection', { user_id: 'alice', connection_id: phone.commonName }));
    await refused(phone, 60_000);
    await phone.client.stop();
    assert.deepEqual(await listedIds('off'), [laptop.commonName]);

    phone = { ...phone, ...(await startDevice('phone-again', phone.file)) };
    await refused(phone);
    assert.equal(phone.client.connections(), 0, 'the deleted configuration never connects again');
  });

  test('destroying the user ends the remaining tunnel and removes the user', async () => {
    assert.ok(laptop !== null, 'the laptop is connected');
    assertSuccess(await portal.post('/destroy', { user_id: 'alice' }));
    await refused(laptop, 60_000);
    assert.deepEqual(await portal.admin.users(), []);
    assert.deepEqual(await connectionList('on'), { [PROFILE]: [] });
  });

  test('the connection history keeps every connect and disconnect, with byte counts', async () => {
    assert.ok(laptop !== null, 'the laptop was connected');
    // OpenVPN ends a killed session a few seconds after the client was told to go: wait for its report.
    const commonName = laptop.commonName;
    const closedHistory = async () => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const entries = await connectionHistory(portal.portal.ctx.db, commonName);
        if (entries.length >= 2 && entries.every((entry) => entry.disconnectedAt !== null)) return entries;
        await sleep(200);
      }
      return connectionHistory(portal.portal.ctx.db, commonName);
    };
    const history = await closedHistory();
    assert.equal(history.length, 2, `two connections of the laptop: ${JSON.stringify(history)}`);
    for (const entry of history) {
      assert.equal(entry.userId, 'alice');
      assert.ok(entry.disconnectedAt !== null, `every connection was closed: ${JSON.stringify(entry)}`);
      assert.ok((entry.bytesIn ?? 0) > 0 && (entry.bytesOut ?? 0) > 0, `bytes were counted: ${JSON.stringify(entry)}`);
    }
  });

  test("RADIUS accounting has each connection's Start and Stop, the Stop with the node's counts", async () => {
    const ofLaptop = async () =>
      (await radius.records()).filter((record) => record['Framed-IP-Address']?.startsWith('198.19.60.'));
    let records = await ofLaptop();
    for (
      let attempt = 0;
      attempt < 100 && records.filter((record) => record['Acct-Status-Type'] === 'Stop').length < 3;
      attempt++
    ) {
      await sleep(200);
      records = await ofLaptop();
    }
    const starts = records.filter((record) => record['Acct-Status-Type'] === 'Start');
    const stops = records.filter((record) => record['Acct-Status-Type'] === 'Stop');
    assert.ok(starts.length >= 3, `the connections' Starts: ${JSON.stringify(records)}`);
    assert.deepEqual(
      stops.map((stop) => stop['Acct-Session-Id']).sort(),
      starts.map((start) => start['Acct-Session-Id']).sort(),
      'a Stop for every Start',
    );
    for (const start of starts) {
      assert.equal(start['User-Name'], 'alice');
      assert.equal(start['Calling-Station-Id'], lab.clientAddress);
      assert.match(start['Framed-IPv6-Address'] ?? '', /^fd00:60::/);
    }
    for (const stop of stops) {
      assert.equal(stop['Acct-Terminate-Cause'], 'User-Request');
      assert.ok(Number(stop['Acct-Input-Octets']) > 0, `counted: ${JSON.stringify(stop)}`);
    }
  });
});
