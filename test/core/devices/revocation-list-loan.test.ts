// A revocation list lent to enrollment (one the refresher cannot believe yet, because its CA is not
// known) keeps checking the chains presented until a list at least as new is believed from its
// source: an older list of the same CA believed meanwhile (a distribution point's mirror that has
// not caught up, an old list served again) does not take the loan's revocations away, nor does a
// newer list of a namesake CA under another key (a CA renewed under its name, both served from
// one distribution point while the change-over lasts), which checks none of the loan's chains.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import {
  CrlServer,
  MdmCa,
  assertEnrollmentRefusedAsRevoked,
  enrollOverTls,
  type DeviceCertificateFiles,
  tlsEnrollUrl,
} from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('a list lent to enrollment, then an older list of its CA believed', () => {
  const HOUR_MS = 3_600_000;
  let ca: MdmCa;
  let crls: CrlServer;
  let portal: TestPortal | undefined;
  let served: string;
  let older: string;
  let revoked: DeviceCertificateFiles;
  let kept: DeviceCertificateFiles;

  before(async () => {
    ca = MdmCa.make('Loaned');
    revoked = ca.device('revoked', { cn: 'revoked', uri: 'urn:mdm:serial:LOAN-REVOKED' });
    kept = ca.device('kept', { cn: 'kept', uri: 'urn:mdm:serial:LOAN-KEPT' });
    // Made an hour ago, before the revocation, and still current: what a mirror behind serves.
    older = ca.writeCrl({ thisUpdate: new Date(Date.now() - HOUR_MS), file: 'older.crl' });
    served = ca.revoke(revoked.certificate);
    crls = await CrlServer.start(() => served);
    // No intermediate configured: the issuing CA is known only once a chain of it enrolls.
    portal = await startTestPortal({
      config: { enrollment: ca.mutualTlsEnrollment({ crl: [crls.url], crlRefresh: 'PT1S' }) },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    ca?.remove();
  });

  test('a certificate only the lent list revokes stays refused after the older list is put in force', async () => {
    assert.ok(portal);
    const running = portal;
    await until(
      'the newer list refused while its CA is not known, and lent',
      async () => /^vpn_portal_crl_refused_total\{reason="unknown-issuer"\} [1-9]/m.test(await metricsText(running)),
      30_000,
    );
    served = older;
    for (const serial of ['LOAN-REVOKED', 'LOAN-KEPT'])
      await running.admin.registerDevice({ user_id: 'lena', profile_id: 'employees', platform: 'linux', serial });
    const url = tlsEnrollUrl(running);
    await assertEnrollmentRefusedAsRevoked(url, ca, revoked, 'now');
    // A chain of the CA enrolls: the CA is known, and the older list is believed.
    const enrolled = await enrollOverTls(url, ca, kept, { public_key: generateWireGuardKeyPair().publicKey });
    assert.equal(enrolled.status, 200, enrolled.text);
    await until(
      'the older list in force',
      async () => (await metricsText(running)).includes(`vpn_portal_crl_read_failing{file="${crls.url}"} 0`),
      30_000,
    );
    assert.ok((await metricsText(running)).includes(`vpn_portal_crl_entries{file="${crls.url}"} 0`));
    await assertEnrollmentRefusedAsRevoked(url, ca, revoked, 'now');
  });
});

describe('a list of a renewed CA lent to enrollment, then a newer list of its namesake believed', () => {
  let previous: MdmCa;
  let renewed: MdmCa;
  let crls: CrlServer;
  let portal: TestPortal | undefined;
  let served: string;
  let revoked: DeviceCertificateFiles;

  before(async () => {
    // Two CAs of the very same names, each with keys of its own; the renewed one's issuing CA is
    // known only once a chain of it enrolls.
    previous = MdmCa.make('Change-over MDM');
    renewed = MdmCa.make('Change-over MDM');
    revoked = renewed.device('revoked', { cn: 'revoked', uri: 'urn:mdm:serial:CHANGE-REVOKED' });
    served = previous.writeCrl();
    crls = await CrlServer.start(() => served);
    portal = await startTestPortal({
      config: {
        enrollment: renewed.mutualTlsEnrollment({
          trustAnchors: [previous.rootFile, renewed.rootFile],
          intermediates: [previous.issuingFile],
          crl: [crls.url],
          crlRefresh: 'PT1S',
        }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    previous?.remove();
    renewed?.remove();
  });

  test('a certificate only the renewed CA’s lent list revokes stays refused after the previous CA’s newer list is believed', async () => {
    assert.ok(portal);
    const running = portal;
    const failing = async (value: 0 | 1): Promise<boolean> =>
      (await metricsText(running)).includes(`vpn_portal_crl_read_failing{file="${crls.url}"} ${value}`);
    await until("the previous CA's list believed", () => failing(0), 30_000);

    // The distribution point serves the renewed CA's list, which revokes a device's certificate:
    // its CA is not known yet, so the list is refused and lent to enrollment.
    served = renewed.revoke(revoked.certificate);
    await until("the renewed CA's list refused", () => failing(1), 30_000);
    await running.admin.registerDevice({
      user_id: 'rita',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'CHANGE-REVOKED',
    });
    const url = tlsEnrollUrl(running);
    await assertEnrollmentRefusedAsRevoked(url, renewed, revoked, 'now');

    // Then it serves the previous CA's list again, made later: believed.
    served = previous.writeCrl({ file: 'later.crl' });
    await until("the previous CA's later list believed", () => failing(0), 30_000);
    await assertEnrollmentRefusedAsRevoked(url, renewed, revoked, 'now');
  });
});
