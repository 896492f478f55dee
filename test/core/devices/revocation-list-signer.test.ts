// A revocation list counts only when its CA may sign lists: a CA certificate whose keyUsage lacks
// cRLSign signs none that RFC 5280 lets a relying party believe, however good the signature. Its
// list is refused (`no-crl-sign`, in the metrics and the audit log) and retires nobody; and since
// a certificate of that CA cannot be checked against it, enrollment refuses it, saying why,
// rather than let a certificate the list may revoke through unchecked.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { MdmCa, enrollOverTls, type DeviceCertificateFiles, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('an MDM whose issuing CA may sign certificates but not revocation lists', () => {
  let ca: MdmCa;
  let laptop: DeviceCertificateFiles;
  let portal: TestPortal | undefined;

  before(async () => {
    ca = MdmCa.make('Unlisted MDM', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign']);
    laptop = ca.device('olga-laptop', { cn: 'olga-laptop', uri: 'urn:mdm:serial:NOCRL-1' });
    const revoked = ca.device('stolen', { cn: 'stolen', uri: 'urn:mdm:serial:NOCRL-2' });
    const list = ca.revoke(revoked.certificate);
    portal = await startTestPortal({
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [list], crlRefresh: 'PT1S' }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    ca?.remove();
  });

  test('its list is refused as no-crl-sign, and its devices are refused at enrollment, saying why', async () => {
    assert.ok(portal);
    const running = portal;
    await until(
      'the list refused',
      async () => /^vpn_portal_crl_refused_total\{reason="no-crl-sign"\} [1-9]/m.test(await metricsText(running)),
      30_000,
    );
    const refusals = (await auditRecords(running.portal.ctx.db, { limit: 100 })).filter(
      (row) => row.call === 'crl_refused',
    );
    assert.equal(refusals.length, 1);
    assert.equal(refusals[0]?.parameters['reason'], 'no-crl-sign');
    assert.equal(
      refusals[0]?.detail,
      `revocation list refused: the CA it names ("CN=Unlisted MDM Issuing CA") signed it, but that CA certificate's keyUsage lacks cRLSign: it may not sign revocation lists`,
    );

    await running.admin.registerDevice({
      user_id: 'olga',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'NOCRL-1',
    });
    const answer = await enrollOverTls(tlsEnrollUrl(running), ca, laptop, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(answer.status, 403, answer.text);
    assert.match(
      answer.text,
      /the revocation list of \\"CN=Unlisted MDM Issuing CA\\" cannot be believed: that CA certificate's keyUsage lacks cRLSign/,
    );
  });
});
