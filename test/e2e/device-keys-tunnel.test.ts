// Devices that keep their own keys, with the real tools: a device in namespace "client" makes
// its WireGuard key with `wg genkey`, gives the portal only `wg pubkey`'s output, puts its key
// into the file's PrivateKey line and brings the file up with wg-quick; another makes an
// Ed25519 or P-256 key and a CSR with openssl and runs the real openvpn with the keyless file
// and its own key. Both reach the node through the tunnel, and no private key shows up in any
// table of the portal's database, in the portal's log or in the node agent's.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEVICE_PRIVATE_KEY_PLACEHOLDER } from '../../src/wireguard/client-config.js';
import { capturedLog } from '../support/captured-log.js';
import { databaseText, privateKeyForms } from '../support/device-keys.js';
import { CONNECTED, OpenVpnClient } from '../support/openvpn-client.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

const WIREGUARD = 'application/x-wireguard-profile';
const OPENVPN = 'application/x-openvpn-profile';

describe('devices that keep their own keys reach the node with the real WireGuard and OpenVPN tools', () => {
  let lab: TunnelLab;
  const log = capturedLog('debug');
  /** Every private key a device made, in each form it could leak in. */
  const privateKeys: string[] = [];
  const openVpnClients: OpenVpnClient[] = [];

  before(async () => {
    lab = await startTunnelLab({
      logger: log.logger,
      portalConfig: { reconcileInterval: 'PT3S' },
      // WireGuard (the lab's range) and OpenVPN on one profile: one UDP and one TCP server, a /25 each.
      profile: { oRangeFour: '198.19.60.0/24', oRangeSix: 'fd00:60::/64' },
    });
    await lab.portal.reconcile();
  });

  after(async () => {
    try {
      for (const client of openVpnClients) await client.stop();
    } finally {
      await lab?.close();
    }
  });

  test('a wg genkey key: the file wg-quick refuses until the device puts its key in, then pings pass', async () => {
    const privateKey = (await lab.client.exec('wg', ['genkey'])).stdout.trim();
    const publicKey = (await lab.client.exec('wg', ['pubkey'], { stdin: `${privateKey}\n` })).stdout.trim();
    privateKeys.push(...privateKeyForms(privateKey));
    const created = await lab.portal.post(
      '/create',
      { user_id: 'alice', profile_id: LAB_PROFILE, public_key: publicKey },
      { accept: WIREGUARD },
    );
    assert.equal(created.status, 200, created.text);
    assert.ok(created.text.includes(`\nPrivateKey = ${DEVICE_PRIVATE_KEY_PLACEHOLDER}\n`), created.text);

    const interfaceName = lab.lab.interfaceName('wgc');
    const file = join(lab.directory, `${interfaceName}.conf`);
    await writeFile(file, created.text, { mode: 0o600 });
    const env = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };
    const asReceived = await lab.client.run('wg-quick', ['up', file], { env });
    assert.notEqual(asReceived.exitCode, 0, 'wg-quick refuses the file before the key is in');
    assert.match(asReceived.stderr, /Key is not the correct length or format/);
    assert.equal(
      (await lab.client.run('ip', ['link', 'show', interfaceName])).exitCode,
      1,
      'and leaves no interface behind',
    );

    // The step docs/enrollment-and-devices.md gives the device: the key replaces the placeholder, nothing else changes.
    await writeFile(join(lab.directory, 'device.key'), `${privateKey}\n`, { mode: 0o600 });
    await lab.client.exec('sh', [
      '-c',
      `sed -i "s|^PrivateKey = ${DEVICE_PRIVATE_KEY_PLACEHOLDER}\\$|PrivateKey = $(cat "$1")|" "$2"`,
      'sh',
      join(lab.directory, 'device.key'),
      file,
    ]);
    assert.equal(
      (await readFile(file, 'utf8')).replace(privateKey, DEVICE_PRIVATE_KEY_PLACEHOLDER),
      created.text,
      'only the key was put in',
    );
    await lab.client.exec('wg-quick', ['up', file], { env });
    assert.equal((await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim(), publicKey);
    assert.ok((await lab.peersOnNode()).has(publicKey), 'the node has the device key as its peer');
    assert.ok(await lab.ping(20), 'ping through the tunnel of the device-held key');
  });

  for (const [index, kind] of (['Ed25519', 'P-256'] as const).entries()) {
    test(`an openssl ${kind} key and CSR: openvpn connects with the keyless file and the device's key, and pings pass`, async () => {
      const keyFile = join(lab.directory, `device-${index}.key`);
      const algorithm =
        kind === 'Ed25519' ? ['-algorithm', 'ed25519'] : ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'];
      await lab.client.exec('openssl', ['genpkey', ...algorithm, '-out', keyFile]);
      const csr = (await lab.client.exec('openssl', ['req', '-new', '-key', keyFile, '-subj', '/CN=laptop'])).stdout;
      privateKeys.push(...privateKeyForms(await readFile(keyFile, 'utf8')));
      const created = await lab.portal.post(
        '/create',
        { user_id: 'bob', profile_id: LAB_PROFILE, csr },
        { accept: OPENVPN },
      );
      assert.equal(created.status, 200, created.text);
      assert.doesNotMatch(created.text, /<key>|PRIVATE KEY/);

      const file = join(lab.directory, `device-${index}.ovpn`);
      await writeFile(file, created.text, { mode: 0o600 });
      const tun = lab.lab.interfaceName('tun');
      // The device names its key next to the file, as docs/enrollment-and-devices.md says.
      const client = new OpenVpnClient(lab.client, file, ['--key', keyFile, '--dev', tun]);
      openVpnClients.push(client);
      await client.waitFor(CONNECTED, 'Initialization Sequence Completed', 30_000);
      const { stdout } = await lab.client.exec('ip', ['-o', '-4', 'address', 'show', 'dev', tun]);
      const ipFour = /inet ([0-9.]+)\//.exec(stdout)?.[1];
      assert.ok(ipFour !== undefined, `the tunnel has an IPv4 address: ${stdout}`);
      const gateway = Number(ipFour.split('.')[3]) < 128 ? '198.19.60.1' : '198.19.60.129';
      const ping = await lab.client.run('ping', ['-c', '1', '-i', '0.5', '-w', '10', gateway]);
      assert.equal(ping.exitCode, 0, `ping through the OpenVPN tunnel: ${ping.stdout}${ping.stderr}`);
      await client.stop();
    });
  }

  test('no private key a device made is in the database, the portal log or the node agent log', async () => {
    assert.equal(privateKeys.length > 0, true);
    const places = {
      database: await databaseText(lab.portal.portal.ctx.db),
      'portal log': log.text(),
      'node agent log': lab.agent.output.join(''),
    };
    assert.ok(
      places.database.includes('alice') && places['portal log'].length > 0,
      'the places searched hold something',
    );
    for (const [place, text] of Object.entries(places)) {
      for (const secret of privateKeys) assert.ok(!text.includes(secret), `${place} holds a private key`);
    }
  });
});
