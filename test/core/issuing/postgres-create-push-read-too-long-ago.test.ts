// A create whose portal stands still between storing the configuration and pushing it (SIGSTOP,
// a paused VM) for longer than a node remembers a removal does not push it then: a disable in
// between may have been forgotten by the node. The file is answered; the next reconcile pass
// puts the peer on its node if it is still wanted. The portal's wall clock is a stand-in that
// jumps as it would over the freeze. PostgreSQL only: the held statement keeps its connection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalContext } from '../../../src/core/context.js';
import { createConfiguration } from '../../../src/core/issuing/index.js';
import { MAX_ADD_READ_AGE_MS } from '../../../src/protocol/vpn-daemon.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
import { ManualClock } from '../../support/admin-keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { startPortalOnStandIn } from '../../support/stand-in-node.js';

test('a create held longer than a node remembers a removal answers its file, and its peer comes with the next pass', async (t) => {
  const node = await startRevisionNode(t);
  const clock = new ManualClock(new Date().toISOString());
  const portal = await startPortalOnStandIn(t, node.url, {
    clock,
    config: { reconcileInterval: 'PT1H' },
  });
  await portal.reconcile();
  const ctx = portal.portal.ctx;
  const call = {
    caller: { kind: 'secret', sourceAddress: '192.0.2.7' },
    name: 'create',
    parameters: { user_id: 'alice', profile_id: 'employees' },
    successStatus: 200,
  } as const;
  // Held once the configuration is stored, before the push.
  const hold = new HoldStatement((_operation, text) => text.includes('INSERT INTO wg_peers'));
  const asCall: PortalContext = { ...ctx, db: ctx.db.withPlugin(hold), call, events: ctx.events.forCall(call) };
  const created = createConfiguration(asCall, {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    displayName: 'Phone',
    preferTcp: false,
    expiresIn: undefined,
    accept: 'application/x-wireguard-profile',
  });
  await hold.reached;
  clock.advance(MAX_ADD_READ_AGE_MS + 60_000);
  hold.release();
  const file = await created;
  assert.match(String(file.body), /\[Interface\]/);
  assert.equal(node.peers.size, 0, 'nothing was pushed from a read that old');

  await portal.reconcile();
  assert.equal(node.peers.size, 1, 'the next pass puts the peer on its node');
});
