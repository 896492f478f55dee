// A client's own address that a node reports IPv4-mapped (`::ffff:198.51.100.7`, as a relay
// listening on `::` sees a client that came over IPv4) is the IPv4 address: the session is
// announced with it (what syslog's `client=`, RADIUS's Calling-Station-Id and the webhooks send)
// and stored with it, so a search by the address an abuse report names finds the session, and
// the next pass does not take the same client for one that moved.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import type { PeerListEntry } from '../../../src/protocol/vpn-daemon.js';
import { formatAtom } from '../../../src/shared/time.js';
import { openVpnConfiguration, openVpnEmployees, reportOpenVpnConnect } from '../../support/openvpn-sessions.js';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** The client addresses of the sessions the portal announces from now on. */
function announcedClients(portal: TestPortal): (string | null)[] {
  const clients: (string | null)[] = [];
  portal.portal.ctx.events.afterCommit((event: PortalEvent) => {
    if (event.type === 'session.started') clients.push(event.originatingIp);
  });
  return clients;
}

test('a WireGuard client the node saw at ::ffff:198.51.100.7 is found by 198.51.100.7, and stays one session', async (t) => {
  let listed: PeerListEntry[] = [];
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') answerJson(response, { peer_list: listed });
    else if (path.startsWith('/w/')) response.writeHead(204).end();
    else return false;
    return true;
  });
  const portal = await startPortalOnStandIn(t, nodeUrl);
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const peer = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  const announced = announcedClients(portal);
  listed = [
    {
      public_key: peer.public_key,
      ip_net: [`${peer.ip_four}/32`],
      endpoint: '[::ffff:198.51.100.7]:41000',
      last_handshake_time: formatAtom(new Date()),
      bytes_in: 100,
      bytes_out: 200,
    },
  ];

  await portal.reconcile();
  await portal.reconcile();

  const found = await portal.admin.connectionLog({ ip: '198.51.100.7' });
  assert.deepEqual(
    found.connection_log.map((entry) => [entry.user_id, entry.originating_ip, entry.disconnected_at]),
    [['alice', '198.51.100.7', null]],
    'one open session, from the IPv4 address',
  );
  assert.deepEqual(announced, ['198.51.100.7']);
});

test('an OpenVPN client reported from ::ffff:198.51.100.8 is found by 198.51.100.8', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const connectionId = await openVpnConfiguration(portal, 'bob');
  const announced = announcedClients(portal);

  await reportOpenVpnConnect(portal, connectionId, { originating_ip: '::ffff:198.51.100.8', ip_four: '10.60.0.2' });

  const found = await portal.admin.connectionLog({ ip: '198.51.100.8' });
  assert.deepEqual(
    found.connection_log.map((entry) => [entry.user_id, entry.originating_ip]),
    [['bob', '198.51.100.8']],
  );
  assert.deepEqual(announced, ['198.51.100.8']);
});
