// A node that answers but whose peer list cannot be read (an error answer, a list longer than the
// portal reads) still gets the removals its revocation receipts wait for: a removal needs no list;
// and the sessions of the peers it removes end then, as the removals of a pass that read the list.
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { test } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import type { PeerListEntry } from '../../../src/protocol/vpn-daemon.js';
import { formatAtom } from '../../../src/shared/time.js';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';

test('a node whose peer list fails still gets the removal a revocation waits for, and the receipt says applied once it answered', async (t) => {
  let removals: 'refused' | 'answered' = 'refused';
  const removed: string[] = [];
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') response.writeHead(500).end('{"error":"the peer list could not be read"}');
    else if (path === '/w/add_peer') response.writeHead(204).end();
    else if (path === '/o/connection_list') answerJson(response, { connection_list: [] });
    else if (path === '/w/remove_peer' && removals === 'refused') response.writeHead(500).end('{"error":"busy"}');
    else if (path === '/w/remove_peer')
      void text(response.req).then((body) => {
        removed.push(new URLSearchParams(body).get('public_key') ?? '');
        response.writeHead(204).end();
      });
    else return false;
    return true;
  });
  const portal = await startPortalOnStandIn(t, nodeUrl);
  await portal.reconcile();
  await portal.admin.create({ user_id: 'quinn', profile_id: 'employees' });
  const [configuration] = await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute();
  assert.ok(configuration !== undefined);

  // Quinn is disabled while the node refuses removals: the receipt waits for the node.
  const revocationId = (await portal.admin.disableUser('quinn')) ?? '';
  assert.equal((await portal.admin.revocation(revocationId)).state, 'pending');

  removals = 'answered';
  await portal.reconcile();
  assert.deepEqual(removed, [configuration.public_key], 'the pass sent the removal without the list');
  assert.equal((await portal.admin.revocation(revocationId)).state, 'applied');
});

test('a session whose peer a pass removes without its list ends then, as removed, with the counters the node answered', async (t) => {
  let listed: PeerListEntry[] | 'unreadable' = [];
  let removals: 'refused' | 'answered' = 'refused';
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list' && listed === 'unreadable')
      response.writeHead(500).end('{"error":"the peer list could not be read"}');
    else if (path === '/w/peer_list') answerJson(response, { peer_list: listed });
    else if (path === '/w/add_peer') response.writeHead(204).end();
    else if (path === '/o/connection_list') answerJson(response, { connection_list: [] });
    else if (path === '/w/remove_peer' && removals === 'refused') response.writeHead(500).end('{"error":"busy"}');
    else if (path === '/w/remove_peer' && Array.isArray(listed)) response.writeHead(204).end();
    else if (path === '/w/remove_peer')
      void text(response.req).then((body) =>
        answerJson(response, {
          public_key: new URLSearchParams(body).get('public_key') ?? '',
          ip_net: [],
          bytes_in: 7000,
          bytes_out: 9000,
        }),
      );
    else return false;
    return true;
  });
  const portal = await startPortalOnStandIn(t, nodeUrl);
  await portal.admin.create({ user_id: 'rowan', profile_id: 'employees' });
  const peer = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  listed = [
    {
      public_key: peer.public_key,
      ip_net: [`${peer.ip_four}/32`, `${peer.ip_six}/128`],
      endpoint: '198.51.100.9:41000',
      last_handshake_time: formatAtom(new Date()),
      bytes_in: 5000,
      bytes_out: 6000,
    },
  ];
  await portal.reconcile();
  const ended: Extract<PortalEvent, { type: 'session.ended' }>[] = [];
  portal.portal.ctx.events.afterCommit((event: PortalEvent) => {
    if (event.type === 'session.ended') ended.push(event);
  });

  // Rowan is disabled while the node refuses removals, then the node answers them but not its list.
  const revocationId = (await portal.admin.disableUser('rowan')) ?? '';
  assert.equal(ended.length, 0, 'the removal did not reach the node: the session goes on');
  listed = 'unreadable';
  removals = 'answered';
  await portal.reconcile();

  assert.equal((await portal.admin.revocation(revocationId)).state, 'applied');
  assert.deepEqual(
    ended.map((event) => [event.connectionId, event.cause, event.bytesIn, event.bytesOut, event.session?.ipFour]),
    [[peer.public_key, 'removed', 7000, 9000, peer.ip_four]],
    'the session ended with the removal, as the pass removed the peer',
  );
  const log = await portal.portal.ctx.db.selectFrom('connection_log').select(['ip_four', 'disconnected_at']).execute();
  assert.deepEqual(
    log.map((entry) => [entry.ip_four, entry.disconnected_at === null]),
    [[peer.ip_four, false]],
    'its row in the history is closed',
  );
});
