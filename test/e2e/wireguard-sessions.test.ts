// Who was connected when, from where, with how much traffic — for WireGuard, which has no
// connect event. A device brings up its tunnel and pings; the portal's next full pass opens a
// session from the node's real handshake, with the device's own address as origin; the device
// goes quiet and the session is closed exactly 3 minutes after its last handshake (the portal's
// clock is pinned for that), with the node's byte counters; a second device's session ends
// the moment its user is disabled. GET /connection_log lists both; the connect script hears of
// both ends, and the reference's CONNECT/DISCONNECT lines are in the portal's log. A session the
// portal first sees after a later handshake still starts at its first one, as the agent saw it.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { peerListSchema, VPN_DAEMON_PATHS } from '../../src/protocol/vpn-daemon.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { LAB_GATEWAY, LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

describe('WireGuard sessions derived from real handshakes', () => {
  let lab: TunnelLab;
  let pinnedNow: Date | null = null;
  const logged: Record<string, unknown>[] = [];
  let hookFile: string;
  let scriptDirectory: string;
  let laptop: { publicKey: string; file: string };

  /** The handshake time the node reports for a peer. */
  const lastHandshakeOnNode = async (publicKey: string): Promise<Date> => {
    const response = await fetch(`${lab.nodeUrl}${VPN_DAEMON_PATHS.peerList}?show_all=yes`, {
      headers: { authorization: `Bearer ${lab.portal.portal.ctx.keys.nodeSecret(asNodeNumber(0))}` },
    });
    const { peer_list: peers } = peerListSchema.parse(await response.json());
    const time = peers.find((peer) => peer.public_key === publicKey)?.last_handshake_time;
    assert.ok(typeof time === 'string', `the node reports a handshake of ${publicKey}`);
    return new Date(time);
  };
  const hookLines = async (): Promise<string[]> =>
    (await readFile(hookFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);

  before(async () => {
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) },
    );
    // The connect script writes one line per event: the variables it was given.
    scriptDirectory = await mkdtemp(join(tmpdir(), 'connect-script-'));
    hookFile = join(scriptDirectory, 'hook.log');
    const script = join(scriptDirectory, 'hook.sh');
    await writeFile(
      script,
      `#!/bin/sh\necho "$VPN_EVENT $VPN_PROTO $VPN_USER_ID $VPN_PROFILE_ID $VPN_CONNECTION_ID $VPN_IP_FOUR $VPN_ORIGINATING_IP $VPN_BYTES_IN $VPN_BYTES_OUT" >> ${hookFile}\n`,
      { mode: 0o755 },
    );
    lab = await startTunnelLab({
      clock: { now: () => pinnedNow ?? new Date() },
      logger,
      portalConfig: {
        reconcileInterval: 'PT1H',
        connectScriptPath: script,
        Log: { syslogConnectionEvents: true, originatingIp: true },
      },
    });
  });

  after(async () => {
    await lab?.close();
    await rm(scriptDirectory, { recursive: true, force: true });
  });

  test("a handshake opens a session at the next full pass, from the device's own address", async () => {
    laptop = await lab.provisionDevice('alice', 'Laptop');
    assert.ok(await lab.ping(10), 'the tunnel passes');
    await lab.portal.reconcile();

    const { connection_log: entries } = await lab.portal.admin.connectionLog({ user_id: 'alice' });
    assert.equal(entries.length, 1);
    const [session] = entries;
    assert.equal(session?.vpn_proto, 'wireguard');
    assert.equal(session?.connection_id, laptop.publicKey);
    assert.equal(session?.profile_id, LAB_PROFILE);
    assert.equal(session?.node_number, 0);
    assert.equal(session?.originating_ip, lab.clientAddress, 'the origin is the device, as the node saw it');
    assert.equal(session?.disconnected_at, null, 'the session is open');
    assert.equal(session?.ip_four, '198.19.44.2');
    assert.ok(Date.parse(session?.connected_at ?? '') <= Date.now(), 'it started at the handshake');

    // A second pass changes nothing: one open session per device.
    await lab.portal.reconcile();
    assert.equal((await lab.portal.admin.connectionLog({ user_id: 'alice', open: 'yes' })).connection_log.length, 1);
  });

  test('the connect script and the connection log lines hear of the session', async () => {
    const lines = await hookLines();
    // The byte variables belong to disconnects: empty here.
    assert.deepEqual(lines, [
      `C wireguard alice ${LAB_PROFILE} ${laptop.publicKey} 198.19.44.2 ${lab.clientAddress}  `,
    ]);
    const connect = logged.find((line) => typeof line['msg'] === 'string' && line['msg'].startsWith('CONNECT alice'));
    assert.equal(
      connect?.['msg'],
      `CONNECT alice (${LAB_PROFILE}:${laptop.publicKey}) [${lab.clientAddress} => 198.19.44.2,fd00:44::2]`,
    );
  });

  test('disabling a user ends its open session at once, with what the node counted', async () => {
    const phone = await lab.provisionDevice('bob', 'Phone');
    // Through the phone's own tunnel: the laptop's routes the same range.
    const pinged = await lab.client.run('ping', [
      '-c',
      '1',
      '-W',
      '1',
      '-w',
      '10',
      '-I',
      phone.interfaceName,
      LAB_GATEWAY,
    ]);
    assert.equal(pinged.exitCode, 0, 'the second tunnel passes');
    await lab.portal.reconcile();
    assert.equal((await lab.portal.admin.connectionLog({ user_id: 'bob', open: 'yes' })).connection_log.length, 1);

    await lab.portal.admin.disableUser('bob');
    const [session] = (await lab.portal.admin.connectionLog({ user_id: 'bob' })).connection_log;
    assert.notEqual(session?.disconnected_at, null, 'closed by the removal, not by a later pass');
    assert.ok((session?.bytes_in ?? 0) > 0, 'with the counters remove_peer answered');
    assert.equal(session?.connection_id, phone.publicKey);
    // The session it ended is the portal's own record, not a second call in the audit log.
    const audited = (await lab.portal.admin.auditLog({ user_id: 'bob' })).audit_log.filter(
      (entry) => entry.call === 'disable_user',
    );
    assert.equal(audited.length, 1);
  });

  test('the history pages newest first with a cursor, and filters by state', async () => {
    const first = await lab.portal.admin.connectionLog({ limit: '1' });
    const all = await lab.portal.admin.connectionLog({});
    assert.equal(first.connection_log[0]?.user_id, 'bob', `newest first: ${JSON.stringify(all)}`);
    assert.ok(first.next_cursor !== null);
    const second = await lab.portal.admin.connectionLog({ limit: '1', cursor: first.next_cursor });
    assert.equal(second.connection_log[0]?.user_id, 'alice');
    assert.equal(second.next_cursor, null, 'the last page says so');
    assert.deepEqual(
      (await lab.portal.admin.connectionLog({ open: 'yes' })).connection_log.map((entry) => entry.user_id),
      ['alice'],
      "only alice's session is open",
    );
    const refused = await lab.portal.get('/connection_log', { cursor: 'bm90LWEtY3Vyc29y' });
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.json(), { error: 'invalid value for "cursor"' });
  });
  test('a device that goes quiet is disconnected exactly 3 minutes after its last handshake, with the byte counters', async () => {
    const handshake = await lastHandshakeOnNode(laptop.publicKey);
    await lab.client.exec('wg-quick', ['down', laptop.file]);
    try {
      pinnedNow = new Date(handshake.getTime() + 179_000);
      await lab.portal.reconcile();
      assert.equal(
        (await lab.portal.admin.connectionLog({ user_id: 'alice', open: 'yes' })).connection_log.length,
        1,
        'still open at 179 s',
      );
      pinnedNow = new Date(handshake.getTime() + 181_000);
      await lab.portal.reconcile();
    } finally {
      pinnedNow = null;
    }
    const [session] = (await lab.portal.admin.connectionLog({ user_id: 'alice' })).connection_log;
    assert.equal(
      session?.disconnected_at,
      new Date(handshake.getTime() + 180_000).toISOString().replace('.000Z', '+00:00'),
    );
    assert.ok(
      (session?.bytes_in ?? 0) > 0 && (session?.bytes_out ?? 0) > 0,
      `traffic was counted: ${JSON.stringify(session)}`,
    );
    assert.match(
      (await hookLines()).at(-1) ?? '',
      new RegExp(
        `^D wireguard alice ${LAB_PROFILE} ${laptop.publicKey.replace(/[+/]/g, '\\$&')} 198\\.19\\.44\\.2  \\d+ \\d+$`,
      ),
    );
    assert.ok(logged.some((line) => line['msg'] === `DISCONNECT alice (${LAB_PROFILE}:${laptop.publicKey})`));
  });

  test('a session the portal sees only after a later handshake starts at its first one, which the node agent watched', async () => {
    const tablet = await lab.provisionDevice('carol', 'Tablet');
    const pingThrough = () =>
      lab.client.run('ping', ['-c', '1', '-W', '1', '-w', '10', '-I', tablet.interfaceName, LAB_GATEWAY]);
    assert.equal((await pingThrough()).exitCode, 0, 'the tunnel passes');
    const first = await lastHandshakeOnNode(tablet.publicKey);

    // The device shakes hands again within the same run, as it does every 2 minutes while online,
    // and the portal looks only after that (it was down, or cut off from the node).
    await sleep(1_100);
    await lab.client.exec('wg-quick', ['down', tablet.file]);
    await lab.client.exec('wg-quick', ['up', tablet.file], {
      env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' },
    });
    assert.equal((await pingThrough()).exitCode, 0, 'the tunnel passes again');
    const latest = await lastHandshakeOnNode(tablet.publicKey);
    assert.ok(latest > first, `a later handshake: ${latest.toISOString()} after ${first.toISOString()}`);

    await lab.portal.reconcile();
    const [session] = (await lab.portal.admin.connectionLog({ user_id: 'carol' })).connection_log;
    assert.equal(session?.connected_at, first.toISOString().replace('.000Z', '+00:00'));
  });
});
