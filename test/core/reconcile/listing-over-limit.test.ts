// A node whose peer list is longer than the portal reads (32 MiB: a kernel WireGuard node with
// more than some 150,000 typical peers) cannot be reconciled, and the revocations waiting on it are
// never confirmed: the portal says so at error level, in a metric and on the node's state, rather
// than as one more warning, and says it no more once the node lists less. The node is a local
// HTTP server that answers `/i/node` as a node does and `peer_list` with 33 MiB of peers.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { LIST_ANSWER_BYTES } from '../../../src/node-client/daemon-client.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { capturedLog } from '../../support/captured-log.js';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';

const NODE = asNodeNumber(0);
/** One of the shortest entries a node may list (about 90 bytes). */
const ENTRY = JSON.stringify({ public_key: `${'A'.repeat(43)}=`, ip_net: [], bytes_in: 0, bytes_out: 0 });

/** `/w/peer_list` past the cap: entries written until a mebibyte more than the cap has gone out. */
function writeLongList(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  const chunk = `${Array.from({ length: 1_000 }, () => ENTRY).join(',')},`;
  response.write('{"peer_list":[');
  let written = 0;
  const more = (): void => {
    while (written < LIST_ANSWER_BYTES + 1024 * 1024 && !response.destroyed) {
      written += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', more);
    }
    if (!response.destroyed) response.end(`${ENTRY}]}`);
  };
  more();
}

test('a node whose peer list is over the limit is said to be so at error level, in the metrics and on its state, until it lists less', async (t) => {
  // The ten minutes between two errors pass on the monotonic clock: real time, plus what the story lets pass.
  const realNow = performance.now.bind(performance);
  let passed = 0;
  t.mock.method(performance, 'now', () => realNow() + passed);
  let tooLong = true;
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path !== '/w/peer_list') return false;
    if (tooLong) writeLongList(response);
    else answerJson(response, { peer_list: [] });
    return true;
  });
  const log = capturedLog();
  const portal = await startPortalOnStandIn(t, nodeUrl, { logger: log.logger });
  const metric = async (): Promise<string | undefined> =>
    /^vpn_portal_node_listing_over_limit\{node="0",listing="peer_list"\} (\d+)$/m.exec(
      await (await fetch(portal.portal.metricsUrl ?? '')).text(),
    )?.[1];

  await portal.reconcile();
  const errors = log
    .lines()
    .filter((line) => line.level === 50 && line.msg?.startsWith('peer_list on node 0 failed: '));
  assert.equal(errors.length, 1, log.text());
  assert.match(errors[0]?.msg ?? '', /answered more than 33554432 bytes \(32 MiB, the limit\)/);
  assert.match(errors[0]?.msg ?? '', /it is not reconciled, and revocations waiting on it are not confirmed/);
  const nodes = portal.portal.ctx.nodes;
  assert.equal(nodes.isDown(NODE), false, 'the node answers: it is not held for down');
  assert.deepEqual(
    nodes.listingsOverLimit(NODE).map(({ what, limitBytes }) => ({ what, limitBytes })),
    [{ what: 'peer_list', limitBytes: LIST_ANSWER_BYTES }],
  );
  assert.equal(await metric(), '1');

  await portal.reconcile();
  assert.equal(
    log.lines().filter((line) => line.level === 50).length,
    1,
    'said at error level once, not at every pass',
  );
  passed += 10 * 60_000;
  await portal.reconcile();
  assert.equal(log.lines().filter((line) => line.level === 50).length, 2, 'said again after ten minutes');

  tooLong = false;
  await portal.reconcile();
  assert.deepEqual(nodes.listingsOverLimit(NODE), []);
  assert.equal(await metric(), '0');
});
