// A node that claims to have applied a revision far above any this database handed out (broken,
// or not a node of ours) must not take the portal's counter with it: the agents take revisions
// of at most 15 digits, so a counter moved to 999,999,999,999,999 would number every later
// revocation with one they all refuse. Two stand-in nodes that keep the agent's rule of
// revisions; the second claims the far-ahead revision.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { MAX_BELIEVED_NODE_REVISION } from '../../../src/core/reconcile/pass.js';
import { latestRevision } from '../../../src/storage/revisions.js';
import { capturedLog } from '../../support/captured-log.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { startTestPortal } from '../../support/test-portal.js';

const FAR_AHEAD = 999_999_999_999_999;

function profileOn(profileId: string, nodeNumber: number, nodeUrl: string): PortalConfigFile['ProfileList'][number] {
  return {
    profileId,
    displayName: profileId,
    hostName: [`${profileId}.example.org`],
    onNode: [nodeNumber],
    nodeUrl: [nodeUrl],
    wRangeFour: [`10.7${nodeNumber}.0.0/24`],
    wRangeSix: [`fd7${nodeNumber}::/64`],
    defaultGateway: false,
  };
}

test('a node claims revision 999,999,999,999,999; the portal says so and ignores it, and a disable afterwards still takes the user off both nodes', async (t) => {
  const honest = await startRevisionNode(t);
  const claiming = await startRevisionNode(t);
  const log = capturedLog();
  const portal = await startTestPortal({
    logger: log.logger,
    config: {
      reconcileInterval: 'PT1H',
      ProfileList: [profileOn('office', 0, honest.url), profileOn('lab', 1, claiming.url)],
    },
  });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  for (const profileId of ['office', 'lab'])
    assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: profileId })).status, 200);
  const keyOn = async (nodeNumber: number): Promise<string> =>
    (
      await ctx.db
        .selectFrom('wg_peers')
        .select('public_key')
        .where('node_number', '=', nodeNumber)
        .executeTakeFirstOrThrow()
    ).public_key;
  const [officeKey, labKey] = [await keyOn(0), await keyOn(1)];
  assert.ok(honest.peers.has(officeKey) && claiming.peers.has(labKey), 'each create put its peer on its node');

  // Node 1 now says it applied a revision no database reaches, and the pass reads it.
  claiming.revisions.admit(`${'z'.repeat(43)}=`, 'add', FAR_AHEAD);
  const before = await latestRevision(ctx.db);
  await portal.reconcile();

  // Then alice is disabled: both her removals must reach their nodes and be applied there.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  for (const [node, key, name] of [
    [honest, officeKey, 'node 0'],
    [claiming, labKey, 'node 1'],
  ] as const) {
    const removal = node.log.filter((entry) => entry.kind === 'remove' && entry.key === key).at(-1);
    assert.ok(
      !node.peers.has(key),
      `the disabled user's peer is still on ${name}: removal applied there: ${removal?.applied ?? 'none (refused or not sent)'}; counter ${await latestRevision(ctx.db)}`,
    );
  }
  // The counter went on from its own numbers, and the portal said which node it did not follow.
  const counter = await latestRevision(ctx.db);
  assert.ok(counter <= MAX_BELIEVED_NODE_REVISION, `the counter followed the node to ${counter}`);
  assert.ok(counter < before + 100, `the counter jumped from ${before} to ${counter}`);
  const said = log.lines().filter((line) => line.level === 50 && line['nodeNumber'] === 1);
  assert.ok(said.length > 0, `no error naming node 1 was logged:\n${log.text()}`);
  assert.match(said[0]?.msg ?? '', /^node 1 claims to have applied revision 999999999999999, above 100000000000000/);
});
