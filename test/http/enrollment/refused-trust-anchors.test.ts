// A trust anchor that the path rules refuse whatever is below it vouches for nothing: the portal
// says so at start, naming it (subject, SHA-256) and the rule, in its log and its metrics, rather
// than at the first enrollment under it; and it starts, so a good anchor beside it still serves.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { capturedLog } from '../../support/captured-log.js';
import { MdmCa, enrollOverTls, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** SHA-256 of the certificate file's DER, hex, as the portal names a certificate. */
function sha256Of(file: string): string {
  return new X509Certificate(readFileSync(file)).fingerprint256.replaceAll(':', '').toLowerCase();
}

describe('trust anchors configured beside a good one that vouch for nothing', () => {
  const log = capturedLog();
  let good: MdmCa;
  let notCa: MdmCa;
  let noCertSign: MdmCa;
  let portal: TestPortal | undefined;

  before(async () => {
    good = MdmCa.make('Anchored');
    // An issuing CA that says it is no CA, and one that may not sign certificates, each configured as an anchor.
    notCa = MdmCa.make('Anchor not CA', ['basicConstraints=critical,CA:FALSE']);
    noCertSign = MdmCa.make('Anchor signer', [
      'basicConstraints=critical,CA:TRUE',
      'keyUsage=critical,digitalSignature',
    ]);
    portal = await startTestPortal({
      logger: log.logger,
      config: {
        enrollment: good.mutualTlsEnrollment({
          trustAnchors: [good.rootFile, notCa.issuingFile, noCertSign.issuingFile],
        }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    for (const ca of [good, notCa, noCertSign]) ca?.remove();
  });

  test('the portal starts and names each in its log and its metrics with its SHA-256 and the rule; a device under the good anchor enrolls', async () => {
    assert.ok(portal);
    const refused = [
      {
        option: 'enrollment.clientCertificate.trustAnchors[1]',
        subject: 'CN=Anchor not CA Issuing CA',
        sha256: sha256Of(notCa.issuingFile),
        rule: 'trust anchor "CN=Anchor not CA Issuing CA" is not a CA certificate (its basicConstraints say CA:FALSE)',
      },
      {
        option: 'enrollment.clientCertificate.trustAnchors[2]',
        subject: 'CN=Anchor signer Issuing CA',
        sha256: sha256Of(noCertSign.issuingFile),
        rule: 'trust anchor "CN=Anchor signer Issuing CA" may not sign certificates (its keyUsage lacks keyCertSign)',
      },
    ];
    const logged = log
      .lines()
      .filter((line) => line.level === 50 && line.msg?.startsWith('enrollment.clientCertificate.trustAnchors'));
    assert.deepEqual(
      logged.map(({ option, subject, sha256, rule, msg }) => ({ option, subject, sha256, rule, msg })),
      refused.map((anchor) => ({
        ...anchor,
        msg: `${anchor.option}: ${anchor.rule} (SHA-256 ${anchor.sha256}); it vouches for no device certificate and no revocation list until it is replaced`,
      })),
    );

    const metrics = await (await fetch(portal.portal.metricsUrl ?? '')).text();
    const sample = (subject: string, file: string) =>
      new RegExp(
        `^vpn_portal_trust_anchor_refused\\{subject="${subject}",sha256="${sha256Of(file)}"\\} (\\d)$`,
        'm',
      ).exec(metrics)?.[1];
    assert.deepEqual(
      [
        sample('CN=Anchored Root', good.rootFile),
        sample('CN=Anchor not CA Issuing CA', notCa.issuingFile),
        sample('CN=Anchor signer Issuing CA', noCertSign.issuingFile),
      ],
      ['0', '1', '1'],
    );

    await portal.admin.registerDevice({
      user_id: 'uma',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'ANCHOR-1',
    });
    const laptop = good.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:ANCHOR-1' });
    const answer = await enrollOverTls(tlsEnrollUrl(portal), good, laptop, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(answer.status, 200, answer.text);
  });
});
