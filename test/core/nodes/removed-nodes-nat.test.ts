// A node taken out of the configuration is asked for its NAT by no pass any more: its last mapping
// would stay in force for ever and claim its public address beside the node that serves it now.
// The full pass that ends its sessions records `none` for it from then: later reports name the
// new node's user, earlier ones still the old node's, and passes (of one or two instances) record
// that once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeterministicNat, type NatSettings } from '../../../src/net/deterministic-nat.js';
import { asNodeNumber, asProfileId, asUserId, type NodeNumber } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { type NatMapping, natMappingHistory, recordNatMapping } from '../../../src/storage/nat-mappings.js';
import { ManualClock, twoProfiles } from '../../support/admin-keys.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** Node 7's mapping, and then its replacement node 0's: the same public address. */
const SETTINGS: NatSettings = {
  ranges: ['10.44.0.0/24', '10.45.0.0/24'],
  publicAddresses: ['192.0.2.10'],
  portsPerClient: 100,
};
const BLOCK = new DeterministicNat(SETTINGS).blockOf('10.44.0.7');
const NODE_7 = asNodeNumber(7);
const NODE_0 = asNodeNumber(0);

async function record(portal: TestPortal, nodeNumber: NodeNumber, at: string, mapping: NatMapping): Promise<void> {
  const db = portal.portal.ctx.db;
  await db.transaction().execute((trx) => recordNatMapping(trx, { nodeNumber, appliedAt: at, mapping }, at));
}

async function session(
  portal: TestPortal,
  user: string,
  nodeNumber: NodeNumber,
  start: string,
  end: string | null,
): Promise<void> {
  const db = portal.portal.ctx.db;
  const entry = {
    userId: asUserId(user),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard' as const,
    connectionId: `${user}-key`,
    nodeNumber,
    ipFour: '10.44.0.7',
    ipSix: 'fd44::7',
    originatingIp: '198.51.100.2',
  };
  await openConnection(db, { ...entry, connectedAt: new Date(start) });
  if (end !== null) await closeConnection(db, { ...entry, disconnectedAt: new Date(end), bytesIn: 0, bytesOut: 0 });
}

/**
 * Node 7 translated 192.0.2.10 from 1 February, where alice connected on 10 February; node 0 took
 * the address over on 1 March (as `node0`: deterministic or masquerading), where bob connects at
 * 13:00. The configuration has node 0 only; the portal's pass runs at noon on 1 March. With
 * `database`, a second instance on that database, whose history the first one wrote.
 */
async function nodeSevenReplaced(
  t: test.TestContext,
  node0: NatMapping,
  shared: { readonly clock?: ManualClock; readonly database?: string } = {},
): Promise<{ portal: TestPortal; clock: ManualClock }> {
  const { clock = new ManualClock('2026-03-01T12:00:00Z'), database } = shared;
  const portal = await startTestPortal({ config: twoProfiles, clock, ...(database === undefined ? {} : { database }) });
  t.after(() => portal.close());
  // The pass at start is over before the history is written: the one below is the first to see it.
  await portal.reconcile();
  if (database !== undefined) return { portal, clock };
  await record(portal, NODE_7, '2026-02-01T00:00:00+00:00', { mode: 'deterministic', settings: SETTINGS });
  await record(portal, NODE_0, '2026-03-01T00:00:00+00:00', node0);
  await session(portal, 'alice', NODE_7, '2026-02-10T10:00:00Z', '2026-02-10T12:00:00Z');
  await session(portal, 'bob', NODE_0, '2026-03-01T13:00:00Z', null);
  return { portal, clock };
}

/** The users a report of node 7's old address and port at `at` names, or the refusal. */
async function attribute(portal: TestPortal, at: string): Promise<{ status: number; text: string; users: string[] }> {
  assert.ok(BLOCK);
  const response = await portal.get('/attribution', {
    reason: 'abuse report',
    ip: BLOCK.publicAddress,
    port: String(BLOCK.firstPort + 3),
    at,
  });
  const users =
    response.status === 200
      ? (response.json() as { sessions: { user_id: string }[] }).sessions.map((session) => session.user_id)
      : [];
  return { status: response.status, text: response.text, users };
}

test('after the pass that no longer has node 7, its old public address names the user of the node that serves it now', async (t) => {
  const { portal, clock } = await nodeSevenReplaced(t, { mode: 'deterministic', settings: SETTINGS });
  await portal.reconcile();
  clock.advance(3 * 3_600_000);

  const answer = await attribute(portal, '2026-03-01T14:00:00Z');
  assert.equal(answer.status, 200, `node 7 no longer claims the address: ${answer.text}`);
  assert.deepEqual(answer.users, ['bob']);
  assert.deepEqual(
    (await natMappingHistory(portal.portal.ctx.db, NODE_7)).map(({ appliedAt, mapping }) => [appliedAt, mapping.mode]),
    [
      ['2026-02-01T00:00:00+00:00', 'deterministic'],
      ['2026-03-01T12:00:00+00:00', 'none'],
    ],
    'none from the pass that found node 7 gone; its old mapping stays',
  );
});

test('a report about a time when node 7 still served the address still names node 7’s user', async (t) => {
  const { portal, clock } = await nodeSevenReplaced(t, { mode: 'deterministic', settings: SETTINGS });
  await portal.reconcile();
  clock.advance(3 * 3_600_000);

  const answer = await attribute(portal, '2026-02-10T11:00:00Z');
  assert.equal(answer.status, 200, answer.text);
  assert.deepEqual(answer.users, ['alice']);
});

test('when a masquerading node took the address over, a later report is told that node masqueraded, not that node 7 had no session', async (t) => {
  const { portal, clock } = await nodeSevenReplaced(t, { mode: 'masquerade' });
  await portal.reconcile();
  clock.advance(3 * 3_600_000);

  const answer = await attribute(portal, '2026-03-01T14:00:00Z');
  assert.equal(answer.status, 409, answer.text);
  assert.match(answer.text, /node 0 masqueraded then/);
});

test('later passes, and a second portal instance on the same database, record node 7’s end once', async (t) => {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const { portal: first } = await nodeSevenReplaced(t, { mode: 'deterministic', settings: SETTINGS }, { clock });
  await first.reconcile();
  const { portal: second } = await nodeSevenReplaced(
    t,
    { mode: 'deterministic', settings: SETTINGS },
    { clock, database: first.database },
  );
  clock.advance(3_600_000);
  await Promise.all([first.reconcile(), second.reconcile(), first.reconcile()]);

  const history = await natMappingHistory(first.portal.ctx.db, NODE_7);
  assert.deepEqual(
    history.map(({ mapping }) => mapping.mode),
    ['deterministic', 'none'],
    'one row for the end, however many passes saw it',
  );
  assert.equal((await natMappingHistory(first.portal.ctx.db, NODE_0)).length, 1, 'a configured node is left alone');
});
