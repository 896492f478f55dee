// The housekeeping keeps a node's old NAT mapping while a session of its time is kept: carol's
// session began under a mapping the node replaced before `now - connectionLogRetention`, and
// ended after that moment, so it stays, and so does the mapping ("as long as the sessions they
// explain"). An abuse report through the public address and port of that session must still name
// its user, as `connection_log?ip=&at=` still does by tunnel address.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { DeterministicNat, type NatSettings } from '../../../src/net/deterministic-nat.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { recordNatMapping, type NatMapping } from '../../../src/storage/nat-mappings.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const NODE = asNodeNumber(0);
const OLD: NatSettings = {
  ranges: ['10.44.0.0/24'],
  publicAddresses: ['192.0.2.10', '192.0.2.11'],
  portsPerClient: 250,
};
const NEW: NatSettings = { ranges: ['10.44.0.0/24'], publicAddresses: ['192.0.2.10'], portsPerClient: 100 };

async function recordMapping(portal: TestPortal, appliedAt: string, mapping: NatMapping): Promise<void> {
  const recorded = await portal.portal.ctx.db
    .transaction()
    .execute((trx) => recordNatMapping(trx, { nodeNumber: NODE, appliedAt, mapping }, appliedAt));
  assert.notEqual(recorded, null);
}

/**
 * A portal on 1 March 2026, its first pass done (that day's housekeeping ran before any history),
 * whose node 0 mapped through OLD from 1 January and through NEW from 20 January.
 */
async function portalWithReplacedMapping(t: TestContext): Promise<{ portal: TestPortal; clock: ManualClock }> {
  const clock = new ManualClock('2026-03-01T09:00:00Z');
  const portal = await startTestPortal({ config: { connectionLogRetention: 'P30D' }, clock });
  t.after(() => portal.close());
  await portal.reconcile();
  await recordMapping(portal, '2026-01-01T00:00:00+00:00', { mode: 'deterministic', settings: OLD });
  await recordMapping(portal, '2026-01-20T00:00:00+00:00', { mode: 'deterministic', settings: NEW });
  return { portal, clock };
}

/** A WireGuard session of node 0 of `userId`, closed on 20 February (within the retention on 2 March). */
async function closedSession(
  portal: TestPortal,
  session: {
    userId: string;
    connectionId: string;
    ipFour: string;
    ipSix: string;
    originatingIp: string;
    connectedAt: Date;
  },
): Promise<void> {
  const { db } = portal.portal.ctx;
  await openConnection(db, {
    ...session,
    userId: asUserId(session.userId),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    nodeNumber: NODE,
  });
  await closeConnection(db, {
    connectionId: session.connectionId,
    nodeNumber: NODE,
    disconnectedAt: new Date('2026-02-20T08:00:00Z'),
    bytesIn: 1,
    bytesOut: 2,
  });
}

test('a NAT mapping stays while a session of its time is kept: a report through it still names the user after the housekeeping', async (t) => {
  const { portal, clock } = await portalWithReplacedMapping(t);
  // carol held 10.44.0.12 from 10 January to 20 February: ended within the retention, so kept.
  await closedSession(portal, {
    userId: 'carol',
    connectionId: 'c1',
    ipFour: '10.44.0.12',
    ipSix: 'fd44::c',
    originatingIp: '198.51.100.3',
    connectedAt: new Date('2026-01-10T08:00:00Z'),
  });
  const block = new DeterministicNat(OLD).blockOf('10.44.0.12');
  assert.ok(block !== null);
  const report = {
    ip: block.publicAddress,
    port: String(block.firstPort + 3),
    at: '2026-01-15T12:00:00Z',
    reason: 'CERT 1',
  };
  const before = await portal.get('/attribution', report);
  assert.equal(before.status, 200, `before the housekeeping: ${before.text}`);

  // 2 March, connectionLogRetention P30D: what ended before 31 January goes; carol's session stays.
  clock.advance(86_400_000);
  assert.notEqual(await runHousekeepingIfDue(portal.portal.ctx), null, 'the daily run ran');

  const kept = await portal.get('/connection_log', { ip: '10.44.0.12', at: '2026-01-15T12:00:00Z', reason: 'CERT 1' });
  assert.deepEqual(
    (kept.json() as { connection_log: { user_id: string }[] }).connection_log.map((entry) => entry.user_id),
    ['carol'],
    'the session is still kept',
  );
  const after = await portal.get('/attribution', report);
  assert.equal(after.status, 200, `the report of that moment still names carol: ${after.text}`);
});

test('a session that began in the second its node’s mapping changed keeps the old mapping too, which that second is read through', async (t) => {
  const { portal, clock } = await portalWithReplacedMapping(t);
  // dave connected in the second the new mapping was applied (it may have been 00:00:00.600).
  await closedSession(portal, {
    userId: 'dave',
    connectionId: 'd1',
    ipFour: '10.44.0.13',
    ipSix: 'fd44::d',
    originatingIp: '198.51.100.4',
    connectedAt: new Date('2026-01-20T00:00:00.300Z'),
  });
  const block = new DeterministicNat(OLD).blockOf('10.44.0.13');
  assert.ok(block !== null);
  const report = {
    ip: block.publicAddress,
    port: String(block.firstPort),
    at: '2026-01-20T00:00:00Z',
    reason: 'CERT 2',
  };
  const before = await portal.get('/attribution', report);
  assert.equal(before.status, 200, `before the housekeeping: ${before.text}`);

  clock.advance(86_400_000);
  assert.notEqual(await runHousekeepingIfDue(portal.portal.ctx), null, 'the daily run ran');
  const after = await portal.get('/attribution', report);
  assert.equal(after.status, 200, `the report of that second still names dave through the old mapping: ${after.text}`);
});
