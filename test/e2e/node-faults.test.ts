// A node that hangs or dies, as an unlucky operator meets it, with a device pinging through
// its tunnel. A node frozen for a few seconds (SIGSTOP) makes the portal skip it for a moment;
// a disable_user right after it thaws must still cut the tunnel within seconds, not at the next
// periodic pass. A node agent killed together with its wireguard-go and started again comes
// back with an empty interface; the portal must notice and give its peers back within seconds,
// and must not take back a peer it removed before the restart from an add sent before that.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { asNodeNumber } from '../../src/shared/ids.js';
import { startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

/** Pings once every 100 ms until one passes (or fails, with `expect: false`); resolves with the time that took. */
async function timeUntilPing(lab: TunnelLab, expect: boolean, limitMs: number): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < limitMs) {
    if ((await lab.ping(1)) === expect) return performance.now() - start;
    await sleep(100);
  }
  return Number.POSITIVE_INFINITY;
}

async function waitForEndpointNoted(lab: TunnelLab, publicKey: string): Promise<void> {
  for (let tries = 0; tries < 150; tries++) {
    const text = await readFile(lab.endpointFile, 'utf8').catch(() => '');
    if (text.includes(publicKey)) return;
    await sleep(100);
  }
  assert.fail("the node noted the device's endpoint within 15 s");
}

describe('a node that hangs or restarts, with a device pinging through it', () => {
  let lab: TunnelLab;
  let device: { publicKey: string };

  before(async () => {
    // The periodic pass is far away: only what the portal notices by itself can help.
    lab = await startTunnelLab({ portalConfig: { reconcileInterval: 'PT1H' } });
  });

  after(async () => {
    await lab?.close();
  });

  test('a disable_user right after the node thawed from a 4 s freeze cuts the tunnel within 5 s', async () => {
    device = await lab.provisionDevice('alice', 'Laptop');
    assert.ok(await lab.ping(10), 'the tunnel passes');

    const agentPid = lab.agent.child.pid;
    assert.ok(agentPid !== undefined);
    const frozenAt = performance.now();
    process.kill(agentPid, 'SIGSTOP');
    try {
      // A listing asks the frozen node and gives up after its timeout: the portal now holds it for down.
      const listed = await lab.portal.get('/connection_list');
      assert.equal(listed.status, 200);
      await sleep(Math.max(0, 4_000 - (performance.now() - frozenAt)));
    } finally {
      process.kill(agentPid, 'SIGCONT');
    }
    const disabled = await lab.portal.post('/disable_user', { user_id: 'alice' });
    assert.equal(disabled.status, 204);
    const cutAfter = await timeUntilPing(lab, false, 10_000);
    assert.ok(cutAfter <= 5_000, `the tunnel stopped ${Math.round(cutAfter)} ms after disable_user answered`);
    assert.equal((await lab.peersOnNode()).size, 0, 'the node holds no peer of the disabled user');
  });

  test('a node agent killed with its wireguard-go and started again passes the tunnel within 5 s', async () => {
    assert.equal((await lab.portal.post('/enable_user', { user_id: 'alice' })).status, 204);
    assert.ok(await lab.ping(20), 'the tunnel passes again after enable_user');
    // The node notes where its online devices are every few seconds; wait until it has.
    await waitForEndpointNoted(lab, device.publicKey);

    process.kill(lab.wireguardGoPid(), 'SIGKILL');
    process.kill(lab.agent.child.pid ?? 0, 'SIGKILL');
    await lab.agent.exitCode();
    assert.equal(await lab.ping(2), false, 'nothing passes while the node is down');

    // Measured from the moment the new agent serves (its own start-up is not the portal's doing).
    await lab.startAgent();
    const resumedAfter = await timeUntilPing(lab, true, 30_000);
    assert.ok(
      resumedAfter <= 5_000,
      `the ping passed again ${Math.round(resumedAfter)} ms after the agent served again`,
    );
  });
});

describe('a node agent killed between a disable and an add that was sent before it', () => {
  let lab: TunnelLab;

  before(async () => {
    lab = await startTunnelLab({ portalConfig: { reconcileInterval: 'PT1H' } });
  });

  after(async () => {
    await lab?.close();
  });

  test('the restarted agent still refuses the late add: the disabled device stays off the node', async () => {
    const device = await lab.provisionDevice('carol', 'Phone');
    assert.ok(await lab.ping(10), 'the tunnel passes');
    const nodeSecret = lab.portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? '';
    const node = (path: string, init: RequestInit = {}) =>
      fetch(new URL(path, lab.nodeUrl), { ...init, headers: { authorization: `Bearer ${nodeSecret}` } });
    // What a portal instance that read carol's configuration just now would send, were it held
    // up (a stalled process, a slow network) until after what follows.
    const allowedIps = (await lab.peersOnNode()).get(device.publicKey) ?? [];
    assert.ok(allowedIps.length > 0);
    const nodeInfo = (await (await node('/i/node')).json()) as { max_revision: number };
    const lateAdd = new URLSearchParams({ public_key: device.publicKey, revision: String(nodeInfo.max_revision) });
    for (const ipNet of allowedIps) lateAdd.append('ip_net', ipNet);

    assert.equal((await lab.portal.post('/disable_user', { user_id: 'carol' })).status, 204);
    assert.equal((await lab.peersOnNode()).has(device.publicKey), false, 'the disable took the peer off');
    const removals = join(dirname(lab.endpointFile), 'wireguard-removals.jsonl');
    assert.equal(statSync(removals).mode & 0o777, 0o600, 'private');
    assert.ok(readFileSync(removals, 'utf8').includes(device.publicKey), 'the removal is on disk');

    process.kill(lab.wireguardGoPid(), 'SIGKILL');
    process.kill(lab.agent.child.pid ?? 0, 'SIGKILL');
    await lab.agent.exitCode();
    await lab.startAgent();

    const answer = await node('/w/add_peer', { method: 'POST', body: lateAdd });
    assert.equal(answer.status, 204);
    assert.equal((await lab.peersOnNode()).has(device.publicKey), false, 'the late add put the peer back');
    assert.equal(await lab.ping(2), false, 'nothing passes');
    const after = (await (await node('/i/node')).json()) as { max_revision: number };
    assert.ok(after.max_revision > nodeInfo.max_revision, 'the restarted agent knows the removal’s revision');
  });
});
