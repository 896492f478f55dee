// The reference's daily housekeeping, driven by the portal's clock (injected here): the first
// full pass of a new UTC day turns the day before into daily statistics, deletes closed history
// older than connectionLogRetention and live statistics older than a week, and runs once per
// day; an expired configuration is taken off the database and off the real node.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';

const DAY_ONE = '2026-03-10';

test('the first pass of a new day aggregates yesterday, prunes old history, and an expired configuration leaves the node', async (t) => {
  let now = new Date(`${DAY_ONE}T10:00:00Z`);
  const logged: Record<string, unknown>[] = [];
  const lab = await startPortalWithNode({
    clock: { now: () => now },
    logger: pino(
      { level: 'info' },
      { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) },
    ),
    config: (nodeUrl) => ({
      connectionLogRetention: 'P1M',
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  const db = portal.portal.ctx.db;

  // A configuration for half a day, and some history: a session long closed, a recent one, an open one.
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees', expires_in: 'PT12H' });
  assert.equal((await lab.peersOnNode()).size, 1, "alice's peer is on the node");
  const session = (userId: string, connectionId: string, from: string) => ({
    userId: asUserId(userId),
    profileId: asProfileId('employees'),
    vpnProto: 'openvpn' as const,
    connectionId,
    nodeNumber: asNodeNumber(0),
    ipFour: '10.60.0.2',
    ipSix: 'fd60::2',
    originatingIp: null,
    connectedAt: new Date(from),
  });
  const closeAt = async (connectionId: string, at: string) =>
    closeConnection(db, {
      connectionId,
      nodeNumber: asNodeNumber(0),
      disconnectedAt: new Date(at),
      bytesIn: 1,
      bytesOut: 2,
    });
  await openConnection(db, session('bob', 'old', '2026-01-20T08:00:00Z'));
  await closeAt('old', '2026-01-20T09:00:00Z');
  await openConnection(db, session('carol', 'recent', `${DAY_ONE}T08:00:00Z`));
  await closeAt('recent', `${DAY_ONE}T09:00:00Z`);
  await openConnection(db, session('dave', 'open', `${DAY_ONE}T09:30:00Z`));
  now = new Date(`${DAY_ONE}T10:30:00Z`);
  await portal.reconcile(); // a pass of day one: one session open now

  // Ten minutes into the next day.
  now = new Date('2026-03-11T00:10:00Z');
  await portal.reconcile();
  assert.equal((await lab.peersOnNode()).size, 0, 'the expired configuration left the node');
  assert.deepEqual(await portal.admin.userConfigurationList('alice'), [], 'and the database');
  const history = (await portal.admin.connectionLog()).connection_log.map((entry) => entry.connection_id);
  assert.deepEqual(history, ['open', 'recent'], 'history closed more than a month ago is gone');

  const stats = await portal.admin.stats({ profile_id: 'employees', since: DAY_ONE, until: DAY_ONE });
  assert.deepEqual(
    stats,
    { employees: [{ date: DAY_ONE, max_connection_count: 1, unique_user_count: 2 }] },
    'carol and dave were connected on day one',
  );

  // Later that day: nothing more to do.
  now = new Date('2026-03-11T15:00:00Z');
  await portal.reconcile();
  const runs = logged.filter((line) => line['msg'] === 'housekeeping done').map((line) => line['day']);
  assert.deepEqual(runs, [DAY_ONE, '2026-03-11'], 'once at start on day one, once on day two');
  // Each run says when it starts, with the day it ran before, so its length can be read off the log.
  const steps = logged
    .filter((line) => line['msg'] === 'housekeeping started' || line['msg'] === 'housekeeping done')
    .map((line) => [line['msg'], line['day'], line['lastRun']]);
  assert.deepEqual(steps, [
    ['housekeeping started', DAY_ONE, null],
    ['housekeeping done', DAY_ONE, undefined],
    ['housekeeping started', '2026-03-11', DAY_ONE],
    ['housekeeping done', '2026-03-11', undefined],
  ]);
});
