// A CA's revocation list grows with every certificate it revokes: a list of some thousands of
// entries (a few hundred KB, far below the most a list may hold) is an ordinary list of a
// CA that has served a fleet for a while. Such a list must be read and believed: one that
// cannot be read keeps the last good list in force, so every revocation published from then on
// would neither refuse the certificate at enrollment nor retire its device.
import assert from 'node:assert/strict';
import { appendFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import {
  CrlServer,
  MdmCa,
  enrollOnceListsRead,
  enrollOverTls,
  type DeviceCertificateFiles,
  tlsEnrollUrl,
} from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

/** How many other certificates the CA has revoked before: about 180 KB of list. */
const OTHERS = 5_000;

describe('a revocation list of some thousands of entries', () => {
  let ca: MdmCa;
  let served: string;
  let device: DeviceCertificateFiles;
  let portal: TestPortal | undefined;
  let crls: CrlServer | undefined;

  before(async () => {
    ca = MdmCa.make('Large MDM');
    served = ca.writeCrl();
    crls = await CrlServer.start(() => served);
    portal = await startTestPortal({
      config: {
        enrollment: ca.mutualTlsEnrollment({
          intermediates: [ca.issuingFile],
          crl: [crls.url],
          crlRefresh: 'PT1S',
          crlMaxRetire: 10,
        }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    ca.remove();
  });

  test('is read: the device whose certificate it revokes is retired, and the certificate is refused', async () => {
    assert.ok(portal && crls);
    const registered = await portal.admin.registerDevice({
      user_id: 'olivia',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'BIG-1',
    });
    device = ca.device('olivia-laptop', { cn: 'olivia-laptop', uri: 'urn:mdm:serial:BIG-1' });
    const enrolled = await enrollOnceListsRead(tlsEnrollUrl(portal), ca, device, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(enrolled.status, 200, enrolled.text);

    // The CA's database: the certificates it revoked over the years, as `openssl ca -revoke` notes them.
    const lines: string[] = [];
    for (let index = 1; index <= OTHERS; index++)
      lines.push(
        [
          'R',
          '350101000000Z',
          '240101000000Z',
          `7F${index.toString(16).toUpperCase().padStart(8, '0')}`,
          'unknown',
          `/CN=old-${index}`,
        ].join('\t'),
      );
    appendFileSync(path.join(ca.directory, 'index.txt'), `${lines.join('\n')}\n`);
    served = ca.revoke(device.certificate);
    assert.ok(statSync(served).size < 1024 * 1024, 'well below the most a list may hold');

    const reads = crls.requests + 4;
    await until('four more reads', async () => (crls as CrlServer).requests >= reads, 30_000);
    const metrics = await metricsText(portal);
    assert.ok(
      metrics.includes(`vpn_portal_crl_entries{file="${crls.url}"} ${OTHERS + 1}`),
      `the list is not in force:\n${metrics
        .split('\n')
        .filter((line) => line.startsWith('vpn_portal_crl'))
        .join('\n')}`,
    );
    assert.equal((await portal.admin.device(registered.device_id)).state, 'retired');
    const again = await enrollOverTls(tlsEnrollUrl(portal), ca, device, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(again.status, 403, again.text);
  });
});
