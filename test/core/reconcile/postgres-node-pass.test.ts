// A node that missed a revocation while it could not be reached gets it within seconds of
// answering again, whatever else the portal's reconcile work is doing: the daily housekeeping
// (minutes at ten million history rows) or the end of a full pass does not hold up the pass for
// that node. A real agent with wireguard-go in a namespace, cut off behind a proxy while its
// interface keeps the peer; the housekeeping or the full pass is held, by a plugin on the
// scheduler's database, until the test has seen the peer go. PostgreSQL only: the plugin holds
// the held statement's connection, and SQLite has one, which the node pass needs too (the
// scheduler is the same code on both).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { ReconcileScheduler } from '../../../src/core/reconcile/index.js';
import { asNodeNumber, type WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startPortalWithNode, type PortalWithNode } from '../../support/portal-with-node.js';
import { shiftedClock, type ShiftedClock } from '../../support/shifted-clock.js';
import { startCuttableProxy, type CuttableProxy } from '../../support/tcp-proxies.js';
import { until, within } from '../../support/until.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

/** "Within seconds": the probe asks a node that failed every second, and the pass for it takes well under one. */
const REACH_LIMIT_MS = 8_000;
const HOUR_MS = 3_600_000;
const NODE = asNodeNumber(0);

const employees: PortalConfigFile['ProfileList'][number] = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.48.0.0/24',
  wRangeSix: 'fd48::/64',
  defaultGateway: false,
};

interface MissedRevocation {
  readonly lab: PortalWithNode;
  readonly proxy: CuttableProxy;
  readonly clock: ShiftedClock;
  /** Alice's peer: disabled while the node was cut off, still on its interface. */
  readonly key: WireGuardKey;
  readonly receipt: string;
  /** What the test started, stopped last first when it ends. */
  readonly cleanups: (() => Promise<void>)[];
}

/** A portal and its node, cut off while alice is disabled: her peer is still on the node, her receipt pending. */
async function nodeThatMissedARevocation(t: TestContext): Promise<MissedRevocation> {
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const proxy = await startCuttableProxy();
  cleanups.push(() => proxy.close());
  const clock = shiftedClock();
  const lab = await startPortalWithNode({
    clock,
    // The portal's own passes stay out of the way: only the scheduler under test reconciles.
    config: (nodeUrl) => {
      proxy.forwardTo(Number(new URL(nodeUrl).port));
      return { reconcileInterval: 'PT1H', ProfileList: [{ ...employees, nodeUrl: proxy.url }] };
    },
  });
  cleanups.push(lab.close);
  const { portal } = lab;
  // Bob keeps the node from being emptied (a pass that would empty a node asks first).
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const key = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
  assert.ok((await lab.peersOnNode()).has(key));

  proxy.cut();
  await until('the portal holds the node for down', async () => portal.portal.ctx.nodes.isDown(NODE));
  const receipt = await portal.admin.disableUser('alice');
  assert.ok(receipt !== null);
  assert.equal((await portal.admin.revocation(receipt)).state, 'pending', 'the node did not get the removal');
  assert.ok((await lab.peersOnNode()).has(key), 'the node still lets alice in');
  return { lab, proxy, clock, key, receipt, cleanups };
}

/** Starts a scheduler over the portal's context whose database holds `hold`'s statement; stopped before the portal when the test ends. */
function schedulerWithHold(missed: MissedRevocation, hold: HoldStatement): void {
  const ctx = missed.lab.portal.portal.ctx;
  const scheduler = new ReconcileScheduler({ ...ctx, db: ctx.db.withPlugin(hold) });
  missed.cleanups.push(async () => {
    scheduler.stop();
    hold.release();
    await scheduler.idle();
  });
  // It takes the fleet's "node answers again" from the portal's own scheduler, and runs a full pass.
  scheduler.start(HOUR_MS);
}

/** Restores the node's network and waits for alice's peer to leave it and her receipt to say applied. */
async function revocationReachesTheNode(missed: MissedRevocation): Promise<void> {
  const { lab, proxy, key, receipt } = missed;
  proxy.restore();
  await until(
    'alice’s peer is off the node that came back',
    async () => !(await lab.peersOnNode()).has(key),
    REACH_LIMIT_MS,
  );
  await until(
    'alice’s receipt says applied',
    async () => (await lab.portal.admin.revocation(receipt)).state === 'applied',
    2_000,
  );
  assert.ok((await lab.peersOnNode()).size === 1, 'bob’s peer stays');
}

test('a revocation reaches a node that comes back within seconds while the daily housekeeping is held', async (t) => {
  const missed = await nodeThatMissedARevocation(t);
  // A day later the housekeeping is due again; it is held at its pruning of the live statistics.
  missed.clock.advance(24 * HOUR_MS);
  const hold = new HoldStatement((node, text) => node.kind === 'DeleteQueryNode' && text.includes('"live_stats"'));
  schedulerWithHold(missed, hold);
  await within(hold.reached, 'the housekeeping reached the held statement', 15_000);
  await revocationReachesTheNode(missed);
});

test('a revocation reaches a node that comes back within seconds while a full pass is held after its nodes', async (t) => {
  const missed = await nodeThatMissedARevocation(t);
  // The full pass is held where it records the live statistics, after it went over the nodes.
  const hold = new HoldStatement((node, text) => node.kind === 'InsertQueryNode' && text.includes('"live_stats"'));
  schedulerWithHold(missed, hold);
  await within(hold.reached, 'the full pass reached the held statement', 15_000);
  await revocationReachesTheNode(missed);
});
