// An expired configuration leaves its node within seconds of its expiry even while a full pass is
// under way (a minute at a million configurations): the expiry sweep does not wait for it. A real
// agent with wireguard-go in a namespace; the full pass is held, by a plugin on the scheduler's
// database, where it records the live statistics after going over the nodes, while alice's
// configuration expires. PostgreSQL only: the plugin holds the held statement's connection, and
// SQLite has one, which the sweep needs too (the scheduler is the same code on both).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReconcileScheduler } from '../../../src/core/reconcile/index.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { until, within } from '../../support/until.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

/** "Within seconds" of the expiry: the sweep's timer is set for the moment itself, and its work takes well under one. */
const REACH_LIMIT_MS = 4_000;
/** Alice's configuration expires this long after the scheduler under test starts: time for its first full pass. */
const EXPIRES_AFTER_MS = 6_000;
const HOUR_MS = 3_600_000;

test('an expired configuration leaves its node within seconds while a full pass is held', async (t) => {
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const clock = shiftedClock();
  const lab = await startPortalWithNode({
    clock,
    // The portal's own scheduler stays out of the way: its sweep timer is set an hour ahead
    // (its interval), before alice's configuration is made, and nothing sets it again.
    config: (nodeUrl) => ({
      reconcileInterval: 'PT1H',
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.47.0.0/24',
          wRangeSix: 'fd47::/64',
          defaultGateway: false,
          nodeUrl,
        },
      ],
    }),
  });
  cleanups.push(lab.close);
  const { portal } = lab;
  // Bob keeps the node from being emptied (a pass that would empty a node asks first).
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees', expires_in: 'PT12H' });
  assert.equal(created.status, 200, created.text);
  const key = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
  assert.ok((await lab.peersOnNode()).has(key));
  const [configuration] = await portal.admin.userConfigurationList('alice');
  assert.ok(configuration !== undefined);
  const expiresAt = new Date(configuration.expires_at).getTime();
  clock.advance(expiresAt - clock.now().getTime() - EXPIRES_AFTER_MS);

  // The scheduler under test: its first full pass runs free and sets the sweep's timer for the
  // expiry; the next one is held where it records the live statistics, after the nodes.
  const ctx = portal.portal.ctx;
  const hold = new HoldStatement((node, text) => node.kind === 'InsertQueryNode' && text.includes('"live_stats"'), {
    armed: false,
  });
  const scheduler = new ReconcileScheduler({ ...ctx, db: ctx.db.withPlugin(hold) });
  cleanups.push(async () => {
    scheduler.stop();
    hold.release();
    await scheduler.idle();
  });
  scheduler.start(HOUR_MS);
  await within(scheduler.idle(), 'the first full pass', EXPIRES_AFTER_MS);
  hold.arm();
  void scheduler.runAll();
  await within(hold.reached, 'the full pass reached the held statement', EXPIRES_AFTER_MS);
  const untilExpiry = expiresAt - clock.now().getTime();
  assert.ok(untilExpiry > 0, 'the full pass was held before alice’s configuration expired');
  assert.ok((await lab.peersOnNode()).has(key), 'alice’s peer is on the node until it expires');

  await until(
    'alice’s expired peer is off the node',
    async () => !(await lab.peersOnNode()).has(key),
    untilExpiry + REACH_LIMIT_MS,
  );
  assert.ok(clock.now().getTime() >= expiresAt, 'not before it expired');
  assert.deepEqual(await portal.admin.userConfigurationList('alice'), []);
  assert.equal((await lab.peersOnNode()).size, 1, 'bob’s peer stays');
});
