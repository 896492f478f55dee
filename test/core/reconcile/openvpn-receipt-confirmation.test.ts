// An OpenVPN configuration's revocation counts as done on a node when its client is missing from
// the node's connection list; but only from a list asked for after the revocation committed. A
// list asked for a moment before (a large disable_user commits seconds after it began) may miss a
// client that connected in between, and if the disable's own disconnect failed too, that client
// stays connected. The node is a stand-in of the test's own: the list's timing and the failed
// disconnect are what a real node will not do on demand, and the disable's start seconds before
// it commits is a clock set back while it runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REVOCATION_HEADER } from '../../../src/protocol/admin-api.js';
import { answerJson, startStandInNode } from '../../support/stand-in-node.js';
import { startTestPortal } from '../../support/test-portal.js';

test('an OpenVPN receipt is not confirmed by a connection list asked for before the disable committed, and is by the next', async (t) => {
  /** Runs while the node's next connection list is on its way, before the node answers it. */
  let whileListing: (() => Promise<void>) | null = null;
  let listsAnswer = true;
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') {
      answerJson(response, { peer_list: [] });
      return true;
    }
    if (path === '/o/connection_list') {
      const during = whileListing;
      const answers = listsAnswer;
      whileListing = null;
      void (async () => {
        await during?.();
        if (answers) answerJson(response, { connection_list: [] });
        else response.writeHead(500).end('{"error":"management socket busy"}');
      })();
      return true;
    }
    if (path === '/o/disconnect_client') {
      response.writeHead(500).end('{"error":"management socket busy"}');
      return true;
    }
    return false;
  });
  // The disable began (its receipt's time) before the list was asked for, as a large one does.
  let offsetMs = 0;
  const portal = await startTestPortal({
    clock: { now: () => new Date(Date.now() + offsetMs) },
    config: {
      reconcileInterval: 'PT1H',
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          oRangeFour: '10.62.0.0/24',
          oRangeSix: 'fd62::/64',
          nodeUrl,
        },
      ],
    },
  });
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'carol', profile_id: 'employees' }, 'application/x-openvpn-profile');
  await portal.reconcile();

  // The pass asks for the list; before the node answers, carol is disabled, and the node fails
  // the disable's disconnect. From then on the node cannot list its clients for a while.
  let revocationId = '';
  whileListing = async () => {
    offsetMs = -3_000;
    const disabled = await portal.post('/disable_user', { user_id: 'carol' });
    offsetMs = 0;
    assert.equal(disabled.status, 204);
    revocationId = disabled.headers.get(REVOCATION_HEADER) ?? '';
    listsAnswer = false;
  };
  await portal.reconcile();
  assert.notEqual(revocationId, '');
  const judgedEarly = await portal.admin.revocation(revocationId);
  assert.equal(judgedEarly.state, 'pending', 'a list asked for before the disable committed proves nothing');

  listsAnswer = true;
  await portal.reconcile();
  const judged = await portal.admin.revocation(revocationId);
  assert.equal(judged.state, 'applied', 'a list asked for after it does');
});
