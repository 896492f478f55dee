// Two node passes catching the counter up at once (a restored database, several nodes ahead of
// it, passes of several nodes or instances at a time) must never move the PostgreSQL sequence
// back: a later revocation would carry a revision lower than one the faster node already applied
// for its key, and that node would ignore the removal (answering 204, so the receipt would say
// applied too).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'kysely';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import type { PortalContext } from '../../../src/core/context.js';
import { reconcileNode } from '../../../src/core/reconcile/pass.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { latestRevision } from '../../../src/storage/revisions.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { startTestPortal } from '../../support/test-portal.js';

/** Resolves once a statement of this database waits for the counter's lock. */
async function waitingForTheCounter(ctx: PortalContext): Promise<void> {
  for (;;) {
    const { rows } = await sql<{ waiting: number }>`SELECT count(*)::integer AS waiting FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'ALTER SEQUENCE change_revision%'`.execute(
      ctx.db,
    );
    if ((rows[0]?.waiting ?? 0) > 0) return;
    await delay(20);
  }
}

test('two nodes caught up at once never move the revision counter back, and a disable after it removes the peer', async (t) => {
  const nodeA = await startRevisionNode(t);
  const nodeB = await startRevisionNode(t);
  const profile: PortalConfigFile['ProfileList'][number] = {
    profileId: 'employees',
    displayName: 'Employees',
    hostName: ['a.example.org', 'b.example.org'],
    onNode: [0, 1],
    nodeUrl: [nodeA.url, nodeB.url],
    wRangeFour: ['10.61.0.0/24', '10.62.0.0/24'],
    wRangeSix: ['fd61::/64', 'fd62::/64'],
    defaultGateway: false,
  };
  const portal = await startTestPortal({ config: { reconcileInterval: 'PT1H', ProfileList: [profile] } });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const [row] = await ctx.db.selectFrom('wg_peers').select(['public_key', 'node_number']).execute();
  assert.ok(row !== undefined);
  const key = row.public_key;
  const [mine, other] = row.node_number === 0 ? [nodeA, nodeB] : [nodeB, nodeA];
  const [mineNumber, otherNumber] = row.node_number === 0 ? [0, 1] : [1, 0];
  assert.ok(mine.peers.has(key), 'the create put the peer on its node');
  // The pass at start is over before the nodes are made to be ahead: only the two below catch up.
  await portal.reconcile();

  // The database was restored from a backup: both nodes applied revisions it never handed out;
  // alice's node last heard of her key at 995 (an enable under the old database), up to 1000 in all.
  mine.revisions.admit(key, 'add', 995);
  mine.revisions.admit(`${'x'.repeat(43)}=`, 'add', 1000);
  other.revisions.admit(`${'y'.repeat(43)}=`, 'add', 900);

  // Both nodes' passes catch up at once; the slower one read the counter (inside its
  // transaction) just before the faster one set it to 1000.
  let counterReads = 0;
  // The pass's second read of the counter: the one in the catch-up's transaction, after its check.
  const hold = new HoldStatement((_node, text) => text.includes('is_called') && ++counterReads === 2);
  const slower = reconcileNode(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    ctx.nodes.daemon(asNodeNumber(otherNumber)) ?? assert.fail('no daemon'),
  );
  await hold.reached;
  const faster = reconcileNode(ctx, ctx.nodes.daemon(asNodeNumber(mineNumber)) ?? assert.fail('no daemon'));
  // The faster pass sets the counter at once, or waits for the slower one to be done with it.
  await Promise.race([faster, waitingForTheCounter(ctx)]);
  hold.release();
  await Promise.all([slower, faster]);

  const counter = await latestRevision(ctx.db);
  // Now alice is disabled: her removal must reach her node and be applied there.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  const removal = mine.log.filter((entry) => entry.kind === 'remove' && entry.key === key).at(-1);
  assert.ok(
    !mine.peers.has(key),
    `the disabled user's peer is still on its node: counter after the catch-ups ${counter}, removal sent at revision ${removal?.revision}, applied: ${removal?.applied}`,
  );
  assert.ok(counter >= 1000, `the counter went back to ${counter}`);
});
