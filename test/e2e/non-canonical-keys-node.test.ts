// A WireGuard peer whose public key is the non-canonical twin of another (bit 255 set) is the
// same X25519 point: a device holding the private key can appear as either. With a real agent
// and wireguard-go, a twin on the node, left there by an older portal or put there by hand,
// is taken off by reconcile (also when a configuration stored before the canonical check has
// it), and never put back, so revoking the canonical key really cuts the device off.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asWireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { bit255Twin } from '../support/device-keys.js';
import { LAB_PROFILE, startTunnelLab } from '../support/tunnel-lab.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

test("reconcile takes a key's bit-255 twin off a real node, also one a stored configuration has, and never adds it", async (t) => {
  const lab = await startTunnelLab({ client: false, portalConfig: { reconcileInterval: 'PT1H' } });
  t.after(() => lab.close());
  const { portal } = lab;
  const publicKeyOf = async (userId: string): Promise<string> => {
    const created = await portal.post('/create', { user_id: userId, profile_id: LAB_PROFILE });
    assert.equal(created.status, 200, created.text);
    return wireGuardPublicKey(asWireGuardKey(parseWireGuardFile(created.text).interface.get('PrivateKey') ?? ''));
  };
  const alice = await publicKeyOf('alice');
  const twin = bit255Twin(alice);
  // A configuration stored before the check came in, holding the twin (its own key replaced).
  const mallory = await publicKeyOf('mallory');
  await portal.portal.ctx.db
    .updateTable('wg_peers')
    .set({ public_key: twin })
    .where('public_key', '=', mallory)
    .execute();
  // What an older portal would have pushed for it.
  await lab.node.exec('wg', [
    'set',
    lab.nodeInterface,
    'peer',
    mallory,
    'remove',
    'peer',
    twin,
    'allowed-ips',
    '198.19.44.200/32',
  ]);
  const before = await lab.peersOnNode();
  assert.ok(before.has(alice) && before.has(twin), 'both encodings of one point are peers of the node');

  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  await portal.portal.reconcileNow();
  const after = await lab.peersOnNode();
  assert.equal(after.has(alice), false, 'the revoked key is gone');
  assert.equal(after.has(twin), false, 'and so is its twin, although a stored configuration names it');

  await portal.portal.reconcileNow();
  assert.equal((await lab.peersOnNode()).has(twin), false, 'the next pass does not put it back');
});
