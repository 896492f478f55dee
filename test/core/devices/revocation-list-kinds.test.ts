// A distribution point answers only with the CA's complete list: a delta list (deltaCRLIndicator,
// RFC 5280 §5.2.4), which names only what was revoked since a base list, or a list of one
// partition (issuingDistributionPoint: only CA certificates, another distribution point), is
// not the whole list of the CA. Whoever answers for a plain-http distribution point can serve
// such a genuine, current, newer list of the same CA in place of its complete list; it must not
// take the complete list's place, or every certificate the complete list revokes enrolls again.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { CrlServer, MdmCa, enrollOverTls, type DeviceCertificateFiles, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

/**
 * A genuine list of `ca`'s issuing CA that revokes nothing, made now with `extensions` (an
 * openssl config section's lines, e.g. a deltaCRLIndicator); its path.
 */
function emptyListWith(ca: MdmCa, name: string, extensions: readonly string[]): string {
  const dir = ca.directory;
  writeFileSync(path.join(dir, `${name}-index.txt`), '');
  writeFileSync(path.join(dir, `${name}-crlnumber`), '10\n');
  writeFileSync(
    path.join(dir, `${name}.cnf`),
    [
      '[ca]',
      'default_ca = issuing',
      '[issuing]',
      `database = ${path.join(dir, `${name}-index.txt`)}`,
      `crlnumber = ${path.join(dir, `${name}-crlnumber`)}`,
      `certificate = ${path.join(dir, 'issuing.pem')}`,
      `private_key = ${path.join(dir, 'issuing.key')}`,
      'default_md = sha256',
      'default_crl_days = 1',
      'crl_extensions = crl_ext',
      '[crl_ext]',
      ...extensions,
      '',
    ].join('\n'),
  );
  execFileSync('openssl', ['ca', '-config', `${name}.cnf`, '-gencrl', '-out', `${name}.crl`], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return path.join(dir, `${name}.crl`);
}

for (const { kind, extensions, whole } of [
  // A delta list after base list number 1: it names only what was revoked since.
  { kind: 'a delta list (deltaCRLIndicator)', extensions: ['2.5.29.27 = critical, DER:02:01:01'], whole: false },
  // The CA's list of its CA certificates only (an ARL), as a partitioned CA publishes beside its device list.
  {
    kind: 'a list of CA certificates only (issuingDistributionPoint onlyContainsCACerts)',
    extensions: ['issuingDistributionPoint = critical, @idp', '[idp]', 'onlyCA = TRUE'],
    whole: false,
  },
  // A list with some unknown critical extension: RFC 5280 forbids using it.
  {
    kind: 'a list with an unknown critical extension',
    extensions: ['1.3.6.1.4.1.99999.1 = critical, DER:05:00'],
    whole: false,
  },
  // The CA's next whole list, naming its distribution point and end-entity scope, as Active Directory
  // Certificate Services writes it: believed, and the certificate it no longer revokes enrolls.
  {
    kind: 'a whole list that names its distribution point (issuingDistributionPoint onlyContainsUserCerts)',
    extensions: [
      'issuingDistributionPoint = critical, @idp',
      '[idp]',
      'fullname = URI:http://pki.example.org/issuing.crl',
      'onlyuser = TRUE',
    ],
    whole: true,
  },
] as const) {
  describe(`${kind} of the same CA served in place of its complete list`, () => {
    let ca: MdmCa;
    let served: string;
    let revoked: DeviceCertificateFiles;
    let portal: TestPortal | undefined;
    let crls: CrlServer | undefined;

    before(async () => {
      ca = MdmCa.make('Delta MDM');
      revoked = ca.device('mallory-laptop', { cn: 'mallory-laptop', uri: 'urn:mdm:serial:DELTA-1' });
      // The complete list, made a minute ago, revokes the device's certificate.
      served = ca.revoke(revoked.certificate, { thisUpdate: new Date(Date.now() - 60_000) });
      crls = await CrlServer.start(() => served);
      portal = await startTestPortal({
        config: {
          enrollment: ca.mutualTlsEnrollment({
            intermediates: [ca.issuingFile],
            crl: [crls.url],
            crlRefresh: 'PT1S',
          }),
        },
      });
    });

    after(async () => {
      await portal?.close();
      await crls?.close();
      ca.remove();
    });

    const story = whole
      ? 'it is believed: the certificate the list before revoked, and it does not, enrolls'
      : 'the complete list stays in force: the certificate it revokes is still refused';
    test(story, async () => {
      assert.ok(portal && crls);
      await portal.admin.registerDevice({
        user_id: 'mallory',
        profile_id: 'employees',
        platform: 'linux',
        serial: 'DELTA-1',
      });
      const url = crls.url;
      await until(
        'the complete list read',
        async () => (await metricsText(portal as TestPortal)).includes(`vpn_portal_crl_entries{file="${url}"} 1`),
        30_000,
      );
      const enroll = () =>
        enrollOverTls(tlsEnrollUrl(portal as TestPortal), ca, revoked, {
          public_key: generateWireGuardKeyPair().publicKey,
        });
      const before = await enroll();
      assert.equal(before.status, 403, before.text);
      assert.match(before.text, /revoked/);

      // Someone on the path to the plain-http distribution point answers with the CA's other,
      // genuine and newer list.
      served = emptyListWith(ca, 'partial', extensions);
      const reads = crls.requests + 3;
      await until('three more reads', async () => (crls as CrlServer).requests >= reads, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 500));

      const again = await enroll();
      const refusals = /vpn_portal_crl_refused_total\{reason="not-whole"\} (\d+)/.exec(await metricsText(portal));
      if (whole) {
        assert.equal(again.status, 200, again.text);
        assert.equal(Number(refusals?.[1] ?? 0), 0, 'no reading was refused as not whole');
        return;
      }
      assert.equal(again.status, 403, `the revoked certificate enrolled: ${again.status} ${again.text.slice(0, 200)}`);
      assert.match(again.text, /revoked/);
      assert.ok(Number(refusals?.[1]) >= 3, 'each reading of it is refused as not whole');
    });
  });
}
