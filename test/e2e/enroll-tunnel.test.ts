// The enrollment story with the real tools: an administrator makes a one-use token, the
// device in namespace "client" runs examples/enroll-wireguard.sh as an MDM would push it
// (its key from `wg genkey`, redeemed with curl at {baseUrl}enroll, the PrivateKey line
// filled, the file written 0600, brought up with wg-quick on wireguard-go), and pings the node
// through the tunnel. The token works once; the device's private key is in no table of the
// portal's database, in no line of the portal's log or the node agent's, and neither is the token.
import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { capturedLog } from '../support/captured-log.js';
import { databaseText, privateKeyForms } from '../support/device-keys.js';
import { hostExec } from '../support/netns.js';
import { LAB_PROFILE, startTunnelLab, type LabAddresses, type TunnelLab } from '../support/tunnel-lab.js';

const SCRIPT = new URL('../../examples/enroll-wireguard.sh', import.meta.url).pathname;
const WIREGUARD_GO = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };

describe('a device enrolls with a one-use token and its own wg genkey key through examples/enroll-wireguard.sh', () => {
  let lab: TunnelLab;
  let addresses: LabAddresses | undefined;
  const log = capturedLog('debug');
  let enrollUrl = '';

  before(async () => {
    lab = await startTunnelLab({
      logger: log.logger,
      portalConfig: (lab) => {
        addresses = lab;
        return { reconcileInterval: 'PT3S' };
      },
    });
    await lab.portal.reconcile();
    // The device reaches the portal through the node, as a managed laptop reaches a portal on the
    // Internet: a route on each side, and the node forwards (a namespace's own setting).
    assert.ok(addresses !== undefined);
    const portalUrl = new URL(lab.portal.portal.url);
    await lab.node.exec('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    await lab.client.exec('ip', ['route', 'add', `${portalUrl.hostname}/32`, 'via', lab.nodeAddressForClient]);
    // Goes with the lab's veth when the lab is removed.
    await hostExec('ip', ['route', 'add', `${lab.clientAddress}/32`, 'via', addresses.nodeAddressForPortal]);
    enrollUrl = `${portalUrl.origin}${lab.portal.portal.ctx.config.basePath}/enroll`;
  });

  after(async () => {
    await lab?.close();
  });

  test('the script enrolls the device, writes its file 0600 and the tunnel carries pings; the token works once', async () => {
    const made = await lab.portal.admin.enrollmentToken({
      user_id: 'carol',
      profile_id: LAB_PROFILE,
      display_name: 'Carol laptop',
    });
    // What the MDM pushes: the token in a file only root may read.
    const tokenFile = join(lab.directory, 'enrollment-token');
    await writeFile(tokenFile, `${made.enrollment_token}\n`, { mode: 0o600 });
    const interfaceName = lab.lab.interfaceName('wgc');
    const configFile = join(lab.directory, 'wireguard', `${interfaceName}.conf`);

    const enrolled = await lab.client.run('sh', [SCRIPT, enrollUrl, configFile], {
      env: { ...WIREGUARD_GO, VPN_ENROLLMENT_TOKEN_FILE: tokenFile },
    });
    assert.equal(enrolled.exitCode, 0, `${enrolled.stdout}${enrolled.stderr}`);
    assert.match(enrolled.stdout, /enrolled; configuration written to /);

    assert.equal((await stat(configFile)).mode & 0o777, 0o600, 'the file is readable by its owner only');
    const text = await readFile(configFile, 'utf8');
    const privateKey = /^PrivateKey = (\S+)$/m.exec(text)?.[1];
    assert.ok(
      privateKey !== undefined && privateKey !== '@DEVICE_PRIVATE_KEY@',
      'the device put its key into the file',
    );
    const publicKey = (await lab.client.exec('wg', ['pubkey'], { stdin: `${privateKey}\n` })).stdout.trim();
    assert.equal(
      (await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim(),
      publicKey,
      'wg-quick brought the file up',
    );
    const [configuration] = await lab.portal.admin.userConfigurationList('carol');
    assert.deepEqual(
      [configuration?.connection_id, configuration?.display_name],
      [publicKey, 'Carol laptop'],
      "the portal has the device's public key",
    );
    assert.ok((await lab.peersOnNode()).has(publicKey), 'the node has the device as its peer');
    assert.ok(await lab.ping(20), 'ping through the tunnel');

    // The same token a second time: refused with the portal's reason, nothing written.
    const secondFile = join(lab.directory, 'wireguard', 'second.conf');
    const again = await lab.client.run('sh', [SCRIPT, enrollUrl, secondFile], {
      env: { ...WIREGUARD_GO, VPN_ENROLLMENT_TOKEN_FILE: tokenFile },
    });
    assert.equal(again.exitCode, 1, `${again.stdout}${again.stderr}`);
    assert.match(
      again.stderr,
      /the portal refused the enrollment \(410\): \{"error":"enrollment token is used up \(1 of 1 uses taken\)"\}/,
    );
    await assert.rejects(stat(secondFile), /ENOENT/, 'no file for a refused enrollment');
    assert.equal((await lab.portal.admin.userConfigurationList('carol')).length, 1);

    // Neither the private key nor the token is anywhere the portal or the node keeps or logs.
    const places = {
      database: await databaseText(lab.portal.portal.ctx.db),
      'portal log': log.text(),
      'node agent log': lab.agent.output.join(''),
    };
    assert.ok(
      places.database.includes(publicKey) && places['portal log'].includes('enroll'),
      'the places searched hold the enrollment',
    );
    for (const [place, content] of Object.entries(places)) {
      for (const secret of privateKeyForms(privateKey))
        assert.ok(!content.includes(secret), `${place} holds the device's private key`);
      assert.ok(!content.includes(made.enrollment_token), `${place} holds the enrollment token`);
    }
  });
});
