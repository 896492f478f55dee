// A profile that ran OpenVPN and WireGuard on a node now runs WireGuard alone there: what the
// database still holds of OpenVPN on that node (a configuration, an open session, a receipt
// waiting) is settled by the node's own client list all the same, not left open for ever.
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { test } from 'node:test';
import { DISCONNECT_REPORT_GRACE_MS } from '../../../src/core/sessions/index.js';
import { asConnectionId, asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { insertCertificate } from '../../../src/storage/certificates.js';
import { connectionHistory, openConnection } from '../../../src/storage/connection-log.js';
import type { Db } from '../../../src/storage/database.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';

/**
 * The OpenVPN configuration `userId` got on node 0 when `employees` still ran OpenVPN there, as
 * the database keeps it: the profile's change leaves the row where it was.
 */
function insertCertificateFromBefore(db: Db, userId: string, commonName: string): Promise<void> {
  return insertCertificate(db, {
    commonName: asConnectionId(commonName),
    userId: asUserId(userId),
    profileId: asProfileId('employees'),
    nodeNumber: asNodeNumber(0),
    displayName: 'Laptop',
    createdAt: '2026-03-01T09:00:00+00:00',
    expiresAt: '2099-01-01T09:00:00+00:00',
    authKey: null,
    publicKey: null,
    expiryWarned: false,
  });
}

test('a node whose profile dropped OpenVPN has its OpenVPN sessions ended and its OpenVPN receipts confirmed by its list', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const lab = await startPortalWithNode({
    clock,
    config: (nodeUrl) => ({
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.63.0.0/24',
          wRangeSix: 'fd63::/64',
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  const db = portal.portal.ctx.db;

  // Olga has a WireGuard configuration, and an OpenVPN one from when the profile still ran
  // OpenVPN on node 0, connected since 08:00: what that configuration left in the database.
  await portal.admin.create({ user_id: 'olga', profile_id: 'employees' });
  const commonName = 'olga-openvpn-from-before';
  await insertCertificateFromBefore(db, 'olga', commonName);
  await openConnection(db, {
    userId: asUserId('olga'),
    profileId: asProfileId('employees'),
    vpnProto: 'openvpn',
    connectionId: commonName,
    nodeNumber: asNodeNumber(0),
    ipFour: '10.60.0.2',
    ipSix: 'fd60::2',
    originatingIp: '198.51.100.7',
    connectedAt: new Date('2026-03-02T08:00:00Z'),
  });

  // She is disabled while the node is down: neither configuration could be taken off it.
  await lab.stopAgent();
  const revocationId = (await portal.admin.disableUser('olga')) ?? '';
  assert.equal((await portal.admin.revocation(revocationId)).state, 'pending');

  await lab.startAgent();
  const firstPass = clock.now();
  await portal.reconcile();
  assert.equal(
    (await portal.admin.revocation(revocationId)).state,
    'applied',
    'the node lists no client of hers: her OpenVPN configuration is gone from it too',
  );
  const session = async () => (await connectionHistory(db, commonName))[0]?.disconnectedAt;
  assert.equal(await session(), null, 'missed once: a disconnect report may be on its way');

  clock.advance(DISCONNECT_REPORT_GRACE_MS);
  await portal.reconcile();
  assert.equal(
    await session(),
    '2026-03-02T09:00:00+00:00',
    `ended as lost when the node's list first missed it (${firstPass.toISOString()})`,
  );
});

test("a client still connected to the OpenVPN process the profile dropped (the node's service left running) is disconnected by the pass", async (t) => {
  const disconnected: string[] = [];
  // A node as eduVPN's daemon runs it: its OpenVPN service was not stopped with the profile's change.
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') answerJson(response, { peer_list: [] });
    else if (path === '/o/connection_list')
      answerJson(response, {
        connection_list: [{ common_name: 'pavel-openvpn-from-before', ip_four: '10.60.0.3', ip_six: 'fd60::3' }],
      });
    else if (path === '/o/disconnect_client')
      void text(response.req).then((body) => {
        disconnected.push(new URLSearchParams(body).get('common_name') ?? '');
        answerJson(response, {});
      });
    else return false;
    return true;
  });
  const portal = await startPortalOnStandIn(t, nodeUrl);
  await portal.admin.create({ user_id: 'pavel', profile_id: 'employees' });
  await insertCertificateFromBefore(portal.portal.ctx.db, 'pavel', 'pavel-openvpn-from-before');

  await portal.reconcile();
  assert.ok(disconnected.includes('pavel-openvpn-from-before'), 'the profile no longer runs OpenVPN on this node');
});
