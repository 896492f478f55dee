// Leaving management ends the tunnel when its certificate is revoked, with the real tools: a device enrolls
// over mutual TLS with a certificate of a test CA made at run time (openssl), brings its file up
// with wg-quick on wireguard-go in the client namespace and pings the node; once its certificate
// is on the CA's revocation list (served over http, read every second) the device is retired and
// its ping fails within crlRefresh + 5 s.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { CrlServer, MdmCa, enrollOnceListsRead, tlsEnrollUrl } from '../support/mdm-ca.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };
const REFRESH_S = 1;

describe("a revoked device certificate ends the device's tunnel on a real node", () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let lab: TunnelLab;

  before(async () => {
    ca = MdmCa.make();
    const crlFile = ca.writeCrl();
    crls = await CrlServer.start(() => crlFile);
    const server = ca.server('server');
    lab = await startTunnelLab({
      portalConfig: {
        reconcileInterval: 'PT3S',
        enrollment: {
          tls: { listen: '127.0.0.1:0', certificate: server.certificate, key: server.key },
          clientCertificate: {
            trustAnchors: [ca.rootFile],
            deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
            crl: [crls.url],
            crlRefresh: `PT${REFRESH_S}S`,
          },
        },
      },
    });
    await lab.portal.reconcile();
  });

  after(async () => {
    await lab?.close();
    await crls?.close();
    ca?.remove();
  });

  test('the ping through the tunnel fails within crlRefresh + 5 s after the certificate is revoked', async () => {
    const device = await lab.portal.admin.registerDevice({
      user_id: 'erin',
      profile_id: LAB_PROFILE,
      platform: 'linux',
      serial: 'LAB-CRL-1',
    });
    const certificate = ca.device('erin-laptop', { cn: 'erin-laptop', uri: 'urn:mdm:serial:LAB-CRL-1' });
    const keys = generateWireGuardKeyPair();
    const url = tlsEnrollUrl(lab.portal);
    const answer = await enrollOnceListsRead(url, ca, certificate, { public_key: keys.publicKey });
    assert.equal(answer.status, 200, answer.text);
    const interfaceName = lab.lab.interfaceName('wgc');
    const file = join(lab.directory, `${interfaceName}.conf`);
    await writeFile(file, answer.text.replace('@DEVICE_PRIVATE_KEY@', keys.privateKey), { mode: 0o600 });
    await lab.client.exec('wg-quick', ['up', file], { env: WG_QUICK_ENV });
    assert.ok(await lab.ping(20), 'the tunnel works');

    ca.revoke(certificate.certificate);
    const { failed, afterMs } = await lab.untilPingFails((REFRESH_S + 5) * 1000);
    assert.ok(failed, `the ping still passed ${Math.round(afterMs / 1000)} s after the revocation`);
    assert.equal((await lab.portal.admin.device(device.device_id)).state, 'retired');
    assert.equal((await lab.peersOnNode()).has(keys.publicKey), false, 'the peer is off the node');
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(keys.publicKey), false, 'and a reconcile pass does not bring it back');
    assert.equal(await lab.ping(2), false);
    await lab.client.exec('wg-quick', ['down', file], { env: WG_QUICK_ENV });
  });
});
