// /extend with the real tools: devices that keep their own keys stay connected past their
// configuration's old expiry once it was extended. The portal's clock is moved (the portal's
// expiry sweep runs by it); the tunnels are real. An OpenVPN device also reconnects with the
// certificate /extend issued for its key; a configuration not extended is cut at its expiry, and
// a WireGuard tunnel still ends at the new expiry.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEVICE_PRIVATE_KEY_PLACEHOLDER } from '../../src/wireguard/client-config.js';
import { AUTH_FAILED, CONNECTED, OpenVpnClient } from '../support/openvpn-client.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

const DAY = 86_400_000;

describe('extended configurations keep devices connected past their old expiry', () => {
  let lab: TunnelLab;
  /** How far the portal's clock is ahead of the real one. */
  let offsetMs = 0;
  const clients: OpenVpnClient[] = [];

  before(async () => {
    lab = await startTunnelLab({
      clock: { now: () => new Date(Date.now() + offsetMs) },
      portalConfig: { reconcileInterval: 'PT3S', sessionExpiry: 'P90D', supportedSessionExpiry: ['P1D'] },
      profile: { oRangeFour: '198.19.60.0/24', oRangeSix: 'fd00:60::/64' },
    });
    await lab.portal.reconcile();
  });

  after(async () => {
    try {
      for (const client of clients) await client.stop();
    } finally {
      await lab?.close();
    }
  });

  const openVpnPing = async (tun: string): Promise<boolean> => {
    const { stdout } = await lab.client.exec('ip', ['-o', '-4', 'address', 'show', 'dev', tun]);
    const ipFour = /inet ([0-9.]+)\//.exec(stdout)?.[1];
    assert.ok(ipFour !== undefined, `the tunnel has an IPv4 address: ${stdout}`);
    const gateway = Number(ipFour.split('.')[3]) < 128 ? '198.19.60.1' : '198.19.60.129';
    return (await lab.client.run('ping', ['-c', '1', '-i', '0.5', '-w', '10', gateway])).exitCode === 0;
  };
  const startOpenVpn = async (
    name: string,
    file: string,
    keyFile: string,
  ): Promise<{ client: OpenVpnClient; tun: string }> => {
    const path = join(lab.directory, `${name}.ovpn`);
    await writeFile(path, file, { mode: 0o600 });
    const tun = lab.lab.interfaceName('tun');
    const client = new OpenVpnClient(lab.client, path, ['--key', keyFile, '--dev', tun]);
    clients.push(client);
    await client.waitFor(CONNECTED, 'Initialization Sequence Completed', 30_000);
    return { client, tun };
  };

  test('OpenVPN from a CSR: connected across the old expiry, and reconnecting with the re-issued certificate works', async () => {
    const keyFile = join(lab.directory, 'device.key');
    await lab.client.exec('openssl', [
      'genpkey',
      '-algorithm',
      'EC',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-out',
      keyFile,
    ]);
    const csr = (await lab.client.exec('openssl', ['req', '-new', '-key', keyFile, '-subj', '/CN=laptop'])).stdout;
    const created = await lab.portal.post(
      '/create',
      { user_id: 'bob', profile_id: LAB_PROFILE, csr, expires_in: 'P1D' },
      { accept: 'application/x-openvpn-profile' },
    );
    assert.equal(created.status, 200, created.text);
    const [configuration] = await lab.portal.admin.userConfigurationList('bob');
    assert.ok(configuration !== undefined);
    const first = await startOpenVpn('first', created.text, keyFile);
    assert.ok(await openVpnPing(first.tun), 'ping through the new tunnel');

    const extended = await lab.portal.admin.extend({ user_id: 'bob', connection_id: configuration.connection_id });
    assert.ok(extended.certificate !== null);
    offsetMs = 2 * DAY;
    await lab.portal.reconcile();
    assert.ok(first.client.running, 'the client was not disconnected by the expiry sweep');
    assert.ok(await openVpnPing(first.tun), 'ping two days on, past the old expiry');
    assert.equal((await lab.portal.admin.userConfigurationList('bob'))[0]?.expires_at, extended.expires_at);

    // The device swaps in the new certificate; the file is otherwise the same.
    await first.client.stop();
    const renewedFile = created.text.replace(/<cert>\n[\s\S]*?\n<\/cert>/, `<cert>\n${extended.certificate}\n</cert>`);
    assert.notEqual(renewedFile, created.text);
    const second = await startOpenVpn('renewed', renewedFile, keyFile);
    assert.ok(await openVpnPing(second.tun), 'ping through the tunnel of the re-issued certificate');
    await second.client.stop();

    // The control: a configuration that was not extended is cut at its expiry by the same sweep.
    offsetMs = 0;
    const control = await lab.portal.post(
      '/create',
      { user_id: 'bob', profile_id: LAB_PROFILE, csr, expires_in: 'P1D' },
      { accept: 'application/x-openvpn-profile' },
    );
    assert.equal(control.status, 200, control.text);
    const third = await startOpenVpn('control', control.text, keyFile);
    assert.ok(await openVpnPing(third.tun), 'ping through the control tunnel');
    offsetMs = 2 * DAY;
    await lab.portal.reconcile();
    await third.client.waitFor(AUTH_FAILED, 'AUTH_FAILED', 30_000);
    assert.deepEqual(
      (await lab.portal.admin.userConfigurationList('bob')).map((entry) => entry.connection_id),
      [configuration.connection_id],
      'only the extended configuration is left',
    );
  });

  test('WireGuard from wg genkey: the peer stays on the node past the old expiry, and leaves at the new one', async () => {
    const privateKey = (await lab.client.exec('wg', ['genkey'])).stdout.trim();
    const publicKey = (await lab.client.exec('wg', ['pubkey'], { stdin: `${privateKey}\n` })).stdout.trim();
    const created = await lab.portal.post(
      '/create',
      { user_id: 'alice', profile_id: LAB_PROFILE, public_key: publicKey, expires_in: 'P1D' },
      { accept: 'application/x-wireguard-profile' },
    );
    assert.equal(created.status, 200, created.text);
    const interfaceName = lab.lab.interfaceName('wgc');
    const file = join(lab.directory, `${interfaceName}.conf`);
    await writeFile(file, created.text.replace(DEVICE_PRIVATE_KEY_PLACEHOLDER, privateKey), { mode: 0o600 });
    await lab.client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });
    assert.ok(await lab.ping(20), 'ping through the new tunnel');
    assert.ok((await readFile(file, 'utf8')).includes(privateKey));

    const extended = await lab.portal.admin.extend({ user_id: 'alice', connection_id: publicKey });
    offsetMs += 2 * DAY;
    await lab.portal.reconcile();
    assert.ok((await lab.peersOnNode()).has(publicKey), 'still on the node past the old expiry');
    assert.ok(await lab.ping(20), 'ping past the old expiry');

    // The control: the clock does drive expiry, at the new end.
    offsetMs = new Date(extended.expires_at).getTime() - Date.now() + 1000;
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(publicKey), false, 'gone from the node after the new expiry');
    assert.equal(await lab.ping(3), false, 'no ping after the new expiry');
  });
});
