// OpenVPN sessions whose end the node never reported: a reconcile pass ends them by the
// node's own client list, so nobody stays online (and attributed an address) for ever. And a
// disconnect of no open session ends nothing and announces nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a reconcile pass ends the OpenVPN sessions the node no longer lists, once they are a minute old, and only those', async (t) => {
  let now = new Date();
  const lab = await startPortalWithNode({
    clock: { now: () => now },
    config: (nodeUrl) => ({
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          oRangeFour: '10.61.0.0/24',
          oRangeSix: 'fd61::/64',
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  await portal.admin.create({ user_id: 'hana', profile_id: 'employees' }, 'application/x-openvpn-profile');
  const [configuration] = await portal.admin.userConfigurationList('hana');
  const commonName = configuration?.connection_id ?? '';
  const history = async () =>
    (await connectionHistory(portal.portal.ctx.db, commonName))
      .map((entry) => [entry.ipFour, entry.disconnectedAt !== null] as const)
      .sort(([a], [b]) => a.localeCompare(b));

  // The node reported a connect, then crashed: its OpenVPN lists no client, and no disconnect came.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.61.0.2' });
  await portal.reconcile();
  assert.deepEqual(await history(), [['10.61.0.2', false]], 'a session younger than a minute is not judged yet');

  now = new Date(now.getTime() + 2 * 60_000);
  // Meanwhile the same certificate connected again, from another address, a moment ago.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.4', ip_four: '10.61.0.3' });
  await portal.reconcile();
  assert.deepEqual(
    await history(),
    [
      ['10.61.0.2', true],
      ['10.61.0.3', false],
    ],
    'the unlisted session of two minutes ago ended as lost; the new one is not judged yet',
  );

  // The lost session's disconnect arrives after all: it closes nothing else.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.61.0.2' });
  assert.deepEqual(await history(), [
    ['10.61.0.2', true],
    ['10.61.0.3', false],
  ]);
});

test('a disconnect of no open session on this node answers OK and announces no session end', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const ended: PortalEvent[] = [];
  ctx.events.inTransaction(async (event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  const commonName = await openVpnConfiguration(portal, 'ines');

  // Never connected: the node's report is answered, and nothing ends.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.deepEqual(ended, [], 'no session.ended for a configuration that never connected');

  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.equal(ended.length, 2, 'the real session ends once: recorded and published');

  // The same report again: the session is closed already.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.equal(ended.length, 2, 'a repeated disconnect announces nothing');
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => [entry.ipFour, entry.bytesIn]),
    [['10.60.0.2', 10]],
    'one session, closed by the first disconnect',
  );
});
