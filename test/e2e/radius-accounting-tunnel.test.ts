// RADIUS accounting of a real WireGuard session, checked by a real FreeRADIUS: a device brings up
// its tunnel and the portal's next pass sends the Start (user, tunnel addresses, the device's own
// address, the profile); FreeRADIUS verifies it with the shared secret, and a second FreeRADIUS
// whose secret the portal does not know refuses every request. The next Interim-Update carries the
// node's counters as the pass observed them. The accounting server then goes
// away, the device goes quiet past the 3-minute threshold, and the Stop arrives — same
// Acct-Session-Id, the node's counters, Idle-Timeout — once the server is started again.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { detailRecord, startFreeRadius, type FreeRadius } from '../support/freeradius.js';
import { shiftedClock } from '../support/shifted-clock.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

describe('RADIUS accounting of a real WireGuard session', () => {
  let lab: TunnelLab;
  let radius: FreeRadius;
  let stranger: FreeRadius;
  let folder: string;
  let laptop: { publicKey: string; file: string };
  let start: Record<string, string>;
  let interim: Record<string, string>;
  const clock = shiftedClock();

  const retried = (server: FreeRadius): number =>
    lab.portal.portal.radiusAccounting?.counts.retried.get(`${server.host}:${server.port}`) ?? 0;

  before(async () => {
    radius = await startFreeRadius();
    stranger = await startFreeRadius();
    folder = await mkdtemp(join(tmpdir(), 'radius-secrets-'));
    await writeFile(join(folder, 'right.secret'), radius.secret, { mode: 0o600 });
    await writeFile(join(folder, 'wrong.secret'), 'not-the-secret-of-that-server', { mode: 0o600 });
    lab = await startTunnelLab({
      clock,
      portalConfig: {
        reconcileInterval: 'PT1H',
        accounting: {
          radius: {
            interimInterval: 'PT1M',
            servers: [
              { address: `${radius.host}:${radius.port}`, secretFile: join(folder, 'right.secret') },
              { address: `${stranger.host}:${stranger.port}`, secretFile: join(folder, 'wrong.secret') },
            ],
          },
        },
      },
    });
  });

  after(async () => {
    await lab?.close();
    await radius?.close();
    await stranger?.close();
    await rm(folder, { recursive: true, force: true });
  });

  test('a handshake opens a session whose Start FreeRADIUS accepts with the attributes a firewall reads', async () => {
    laptop = await lab.provisionDevice('alice', 'Laptop');
    assert.ok(await lab.ping(10), 'the tunnel passes');
    await lab.portal.reconcile();
    start = await detailRecord(radius, 'the Start', (record) => record['User-Name'] === 'alice');
    assert.equal(start['Acct-Status-Type'], 'Start');
    assert.equal(start['Framed-IP-Address'], '198.19.44.2');
    assert.equal(start['Framed-IPv6-Address'], 'fd00:44::2');
    assert.equal(start['Calling-Station-Id'], lab.clientAddress, "the device's own address, as the node saw it");
    assert.equal(start['Class'], `0x${Buffer.from(LAB_PROFILE).toString('hex')}`, 'the profile');
    assert.equal(start['NAS-Port-Type'], 'Virtual');
    assert.ok((start['NAS-Identifier'] ?? '') !== '', 'the node');
  });

  test('a server whose shared secret the portal does not have refuses the requests and writes nothing', async () => {
    await until('the other server to refuse a request', async () =>
      /invalid Request Authenticator/i.test(stranger.output()),
    );
    await until('the portal to send it again', async () => retried(stranger) > 0, 30_000);
    assert.deepEqual(await stranger.records(), []);
  });

  test('an Interim-Update carries the counters the last pass observed on the node', async () => {
    assert.ok(await lab.ping(5), 'the tunnel passes');
    await lab.portal.reconcile();
    clock.advance(61_000);
    interim = await detailRecord(
      radius,
      'the Interim-Update',
      (record) => record['User-Name'] === 'alice' && record['Acct-Status-Type'] === 'Interim-Update',
    );
    assert.equal(interim['Acct-Session-Id'], start['Acct-Session-Id']);
    assert.ok(Number(interim['Acct-Input-Octets']) > 0, JSON.stringify(interim));
    assert.ok(Number(interim['Acct-Output-Octets']) > 0, JSON.stringify(interim));
    assert.ok(Number(interim['Acct-Session-Time']) >= 60);
  });

  test('a device that goes quiet while the server is away gets its Stop once the server is back', async () => {
    await radius.stop();
    await lab.client.exec('wg-quick', ['down', laptop.file]);
    clock.advance(181_000);
    await lab.portal.reconcile();
    const [session] = (await lab.portal.admin.connectionLog({ user_id: 'alice' })).connection_log;
    assert.notEqual(session?.disconnected_at, null, 'the session ended');
    const before = retried(radius);
    await until('the Stop to go unanswered', async () => retried(radius) > before, 30_000);
    await radius.start();
    const stop = await detailRecord(
      radius,
      'the Stop',
      (record) => record['User-Name'] === 'alice' && record['Acct-Status-Type'] === 'Stop',
      90_000,
    );
    assert.equal(stop['Acct-Session-Id'], start['Acct-Session-Id']);
    assert.equal(stop['Acct-Terminate-Cause'], 'Idle-Timeout');
    assert.equal(stop['Calling-Station-Id'], lab.clientAddress);
    assert.ok(Number(stop['Acct-Input-Octets']) > 0 && Number(stop['Acct-Output-Octets']) > 0, JSON.stringify(stop));
    assert.ok(Number(stop['Acct-Input-Octets']) >= Number(interim['Acct-Input-Octets']), 'the same counters, later');
    assert.ok(Number(stop['Acct-Session-Time']) >= 180, 'the session lasted until 3 minutes after its last handshake');
    assert.ok(Number(stop['Acct-Delay-Time']) >= 1, 'sent late, and says so');
  });
});
