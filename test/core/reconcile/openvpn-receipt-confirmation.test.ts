// An OpenVPN configuration's revocation counts as done on a node once the node answered a
// disconnect of it sent after the revocation committed, not when its client is missing from the
// node's connection list: a client being admitted is in no list yet, and one admitted a moment
// before the revocation committed connects after the list was read. The node is a stand-in of the
// test's own: a list that misses a client being admitted and a disconnect that fails are what a
// real node will not do on demand.
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { test } from 'node:test';
import { REVOCATION_HEADER } from '../../../src/protocol/admin-api.js';
import { answerJson, startStandInNode } from '../../support/stand-in-node.js';
import { startTestPortal } from '../../support/test-portal.js';

test("an OpenVPN receipt is not confirmed by a list without the client, and is by the next pass's own disconnect", async (t) => {
  let disconnectsAnswer = true;
  const disconnects: string[] = [];
  const nodeUrl = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') answerJson(response, { peer_list: [] });
    else if (path === '/o/connection_list') answerJson(response, { connection_list: [] });
    else if (path === '/o/disconnect_client')
      void text(response.req).then((body) => {
        disconnects.push(new URLSearchParams(body).get('common_name') ?? '');
        if (disconnectsAnswer) answerJson(response, {});
        else response.writeHead(500).end('{"error":"management socket busy"}');
      });
    else return false;
    return true;
  });
  const portal = await startTestPortal({
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
  const [configuration] = await portal.admin.userConfigurationList('carol');
  const commonName = configuration?.connection_id ?? '';

  // Carol's laptop is being admitted when she is disabled: the node lists no client of hers,
  // and fails the disable's disconnect.
  disconnectsAnswer = false;
  const disabled = await portal.post('/disable_user', { user_id: 'carol' });
  assert.equal(disabled.status, 204);
  const revocationId = disabled.headers.get(REVOCATION_HEADER) ?? '';
  await portal.reconcile();
  assert.equal(
    (await portal.admin.revocation(revocationId)).state,
    'pending',
    'a list without her client proves nothing: her disconnect was not answered',
  );

  disconnectsAnswer = true;
  disconnects.length = 0;
  await portal.reconcile();
  assert.deepEqual(disconnects, [commonName], 'the pass disconnects her configuration itself');
  assert.equal((await portal.admin.revocation(revocationId)).state, 'applied', 'and the answer confirms it');
});
