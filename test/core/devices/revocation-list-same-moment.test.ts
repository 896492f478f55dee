// Two revocation lists of one CA made in the same second (a list made, a certificate revoked, a
// list made again): the first, served again after the second (an old copy on a mirror, or
// replayed by whoever answers for a plain-http distribution point), is no newer than the list in
// force, and lacks a revocation it has. It is refused as older, so the certificate revoked
// between them stays refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { CrlServer, MdmCa, enrollOverTls, tlsEnrollUrl, type DeviceCertificateFiles } from '../../support/mdm-ca.js';
import { metricsText, startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('a list of the same second as the list in force, without a revocation that one has', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let portal: TestPortal;
  let revoked: DeviceCertificateFiles;
  let earlier: string;
  let served: string;

  before(async () => {
    ca = MdmCa.make('Same Second MDM');
    // Both lists say they were made in this very second.
    const second = new Date(Math.floor((Date.now() - 60_000) / 1000) * 1000);
    earlier = ca.writeCrl({ file: 'before.crl', thisUpdate: second });
    revoked = ca.device('oscar-laptop', { cn: 'oscar-laptop', uri: 'urn:mdm:serial:SAME-1' });
    served = ca.revoke(revoked.certificate, { file: 'after.crl', thisUpdate: second });
    crls = await CrlServer.start(() => served);
    portal = await startTestPortal({
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crls.url], crlRefresh: 'PT1S' }),
      },
    });
    await portal.admin.registerDevice({
      user_id: 'oscar',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'SAME-1',
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    ca?.remove();
  });

  const enroll = () =>
    enrollOverTls(tlsEnrollUrl(portal), ca, revoked, { public_key: generateWireGuardKeyPair().publicKey });

  test('is refused as older: the certificate revoked between the two stays refused', async () => {
    await until('the list revoking the certificate read', async () => (await enroll()).status === 403, 30_000);

    served = earlier;
    const asked = crls.requests;
    // Two more readings: the earlier list has been read at least once since it was served.
    await until('the earlier list read again', async () => crls.requests >= asked + 2, 30_000);
    const refused = await enroll();
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.text, /revoked/);
    assert.match(await metricsText(portal), /^vpn_portal_crl_refused_total\{reason="older"\} [1-9]/m);
  });
});
