// A node taken out of the configuration is read by no pass any more: its open sessions would stay
// open for ever, named for its tunnel addresses at every later moment. A full pass ends them as
// lost at its time; a configured node that does not answer keeps its sessions open.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { openConnection } from '../../../src/storage/connection-log.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a full pass ends, as lost, the open sessions of a node no longer configured, and only those', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  // The pass at start would end alice's session at 09:00 if it came after her row: it is over first.
  await portal.reconcile();
  const db = portal.portal.ctx.db;
  const open = (userId: string, connectionId: string, nodeNumber: number) =>
    openConnection(db, {
      userId: asUserId(userId),
      profileId: asProfileId('employees'),
      vpnProto: 'wireguard',
      connectionId,
      nodeNumber: asNodeNumber(nodeNumber),
      ipFour: '10.44.0.7',
      ipSix: 'fd44::7',
      originatingIp: '198.51.100.1',
      connectedAt: new Date('2026-03-02T08:00:00Z'),
    });
  // Node 3 was in the configuration when alice connected to it; node 0 still is, but does not answer.
  await open('alice', 'key-on-removed-node', 3);
  await open('bob', 'key-on-node-0', 0);

  clock.advance(60_000);
  await portal.reconcile();

  const { connection_log: entries } = await portal.admin.connectionLog({});
  const byUser = new Map(entries.map((entry) => [entry.user_id, entry]));
  assert.equal(byUser.get('alice')?.disconnected_at, '2026-03-02T09:01:00+00:00', 'ended at the pass');
  assert.equal(byUser.get('bob')?.disconnected_at, null, "an unreachable node's session is not judged");
  clock.advance(59 * 60_000);
  const later = await portal.get('/connection_log', { ip: '10.44.0.7', at: '2026-03-02T10:00:00Z' });
  assert.deepEqual(
    (later.json() as { connection_log: { user_id: string }[] }).connection_log.map((entry) => entry.user_id),
    ['bob'],
    'an hour later, only the session that may still run holds the address',
  );
});
