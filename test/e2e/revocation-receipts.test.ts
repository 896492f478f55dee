// A revocation receipt never says applied while the peer is still on a node: with the real
// node agent (wireguard-go in a namespace), a disable is applied at once when the node answers,
// and stays pending while the agent is stopped (SIGSTOP) — the peer is still on the interface,
// and the receipt goes overdue — until the agent runs again and the portal removes the peer.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { REVOCATION_HEADER, type RevocationInfo } from '../../src/protocol/admin-api.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { runCli } from '../support/portal-process.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

describe('revocation receipts with a real node', () => {
  let lab: TunnelLab;
  let receiver: WebhookReceiver;

  before(async () => {
    lab = await startTunnelLab({
      client: false,
      // Longer than one node timeout (3 s), which a call to a node that hangs may still wait for
      // before it answers: the receipt is seen pending first, then overdue.
      portalConfig: {
        reconcileInterval: 'PT1H',
        revocationDeadline: 'PT5S',
        webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
      },
    });
    await lab.portal.reconcile();
    receiver = await WebhookReceiver.start();
    await lab.portal.admin.createWebhook({ url: receiver.url, event_types: 'revocation.applied,revocation.overdue' });
  });

  after(async () => {
    await receiver?.close();
    await lab?.close();
  });

  async function peerOnNode(userId: string): Promise<string> {
    const created = await lab.portal.admin.create({ user_id: userId, profile_id: LAB_PROFILE });
    const key = wireGuardPublicKey(parseWireGuardFile(created.body).interface.get('PrivateKey') as WireGuardKey);
    assert.ok((await lab.peersOnNode()).has(key), `${userId}'s peer is on the node`);
    return key;
  }

  test('a disable_user the node answers is applied at once, and the command line says so', async () => {
    const key = await peerOnNode('alice');
    const disabled = await lab.portal.post('/disable_user', { user_id: 'alice' });
    assert.equal(disabled.status, 204);
    const receipt = await lab.portal.admin.revocation(disabled.headers.get(REVOCATION_HEADER) ?? '');
    assert.equal(receipt.state, 'applied');
    assert.deepEqual(
      receipt.nodes.map((node) => [node.node_number, node.state, node.connection_ids]),
      [[0, 'applied', [key]]],
    );
    assert.ok(receipt.applied_at !== null && receipt.nodes[0]?.applied_at === receipt.applied_at);
    assert.ok(!(await lab.peersOnNode()).has(key));
    await receiver.waitFor(
      (received) =>
        received.some(
          (hook) =>
            hook.payload.type === 'revocation.applied' && hook.payload.data.revocation_id === receipt.revocation_id,
        ),
      'revocation.applied',
    );

    await peerOnNode('bob');
    const printed = await runCli(['admin', 'disable', 'bob'], {
      env: {
        VPN_PORTAL_URL: `${lab.portal.portal.url}/vpn-user-portal/`,
        VPN_PORTAL_KEY_FILE: lab.portal.portal.ctx.keys.adminApiKeyPath,
      },
    });
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^disabled bob: applied on every node \(node 0\) \(revocation [0-9a-f-]{36}\)\n$/);
  });

  test('while the agent is stopped the receipt is pending and goes overdue with the peer still there; resumed, it is applied within 5 s and the peer is gone', async () => {
    const key = await peerOnNode('carol');
    const agentPid = lab.agent.child.pid;
    assert.ok(agentPid !== undefined);
    process.kill(agentPid, 'SIGSTOP');
    let receipt: RevocationInfo;
    try {
      const disabled = await lab.portal.post('/disable_user', { user_id: 'carol' });
      assert.equal(disabled.status, 204);
      const revocationId = disabled.headers.get(REVOCATION_HEADER) ?? '';
      receipt = await lab.portal.admin.revocation(revocationId);
      assert.equal(receipt.state, 'pending');
      assert.deepEqual(receipt.nodes, [{ node_number: 0, state: 'pending', applied_at: null, connection_ids: [key] }]);
      await receiver.waitFor(
        (received) =>
          received.some(
            (hook) => hook.payload.type === 'revocation.overdue' && hook.payload.data.revocation_id === revocationId,
          ),
        'revocation.overdue',
        15_000,
      );
      receipt = await lab.portal.admin.revocation(revocationId);
      assert.equal(receipt.state, 'overdue');
      assert.ok(
        (await lab.peersOnNode()).has(key),
        'the peer is still on the stopped node: the receipt must not say applied',
      );
    } finally {
      process.kill(agentPid, 'SIGCONT');
    }
    const resumedAt = performance.now();
    while (receipt.state !== 'applied' && performance.now() - resumedAt < 5_000) {
      await sleep(100);
      receipt = await lab.portal.admin.revocation(receipt.revocation_id);
      // Whenever it says applied, the node must already be without the peer.
      if (receipt.state === 'applied')
        assert.ok(!(await lab.peersOnNode()).has(key), 'applied only once the peer is gone');
    }
    assert.equal(
      receipt.state,
      'applied',
      `applied ${Math.round(performance.now() - resumedAt)} ms after the agent resumed`,
    );
    assert.equal(receipt.nodes[0]?.state, 'applied');
    assert.ok(!(await lab.peersOnNode()).has(key), 'wg show no longer lists the key');
    await receiver.waitFor(
      (received) =>
        received.some(
          (hook) =>
            hook.payload.type === 'revocation.applied' && hook.payload.data.revocation_id === receipt.revocation_id,
        ),
      'revocation.applied after the overdue one',
    );
  });
});
