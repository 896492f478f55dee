// The check of a device's MDM certificate, against a test CA made at run time with openssl: a
// chain to the trust anchor passes and yields the device id by each rule; an untrusted issuer,
// a certificate outside its validity, a revoked one (or one under a revoked CA) and one without
// the identity field, or one for another purpose than client authentication, are refused, each
// with its reason; so is every certificate of a CA whose list it may not sign (no cRLSign).
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  ClientCertificateVerifier,
  crlSignedBy,
  crlSignedByKeyOf,
  crlSigners,
  type DeviceIdRule,
  readCaCertificates,
  readCrl,
} from '../../src/keys/client-certificate.js';
import { MdmCa, type DeviceCertificateFiles } from '../support/mdm-ca.js';

const DAY_MS = 86_400_000;
const GUID = '6fa459ea-ee8a-3ca4-894e-db77e160355e';

describe('a device certificate is checked against the trust anchors and revocation lists', () => {
  let ca: MdmCa;
  let other: MdmCa;
  let laptop: DeviceCertificateFiles;
  let phone: DeviceCertificateFiles;
  let stranger: DeviceCertificateFiles;

  before(() => {
    ca = MdmCa.make();
    other = MdmCa.make('Other');
    laptop = ca.device('laptop', { cn: `intune-${GUID}`, serialNumber: 'C02XK1', uri: 'urn:mdm:serial:C02XK1' });
    phone = ca.device('phone', { cn: 'phone' });
    stranger = other.device('stranger', { cn: 'stranger', uri: 'urn:mdm:serial:C02XK1' });
  });

  after(() => {
    ca?.remove();
    other?.remove();
  });

  const verifier = (rule: DeviceIdRule = { from: 'san-uri', prefix: 'urn:mdm:serial:' }, crls: string[] = []) =>
    new ClientCertificateVerifier([ca.rootPem], crls, rule);

  test('a chain to the root yields the device id by each rule, with the certificate’s subject, issuer, serial and end', async () => {
    const now = new Date();
    const bySan = await verifier().verify([laptop.certificatePem, ca.issuingPem], now);
    assert.ok(bySan.ok, JSON.stringify(bySan));
    assert.equal(bySan.certificate.deviceId, 'C02XK1');
    assert.match(bySan.certificate.subject, /CN=intune-/);
    assert.match(bySan.certificate.issuer, /CN=Test MDM Issuing CA/);
    assert.match(bySan.certificate.serialNumber, /^[0-9a-f]+$/i);
    assert.ok(bySan.certificate.notAfter.getTime() > now.getTime());
    const bySerial = await verifier({ from: 'subject-serial' }).verify([laptop.certificatePem, ca.issuingPem], now);
    assert.equal(bySerial.ok && bySerial.certificate.deviceId, 'C02XK1');
    const byCn = await verifier({ from: 'subject-cn' }).verify([laptop.certificatePem, ca.issuingPem], now);
    assert.equal(byCn.ok && byCn.certificate.deviceId, GUID, 'an Intune CN prefix-<guid> is read as the GUID');
    // The issuing CA may be a trust anchor itself.
    const issuingAnchor = new ClientCertificateVerifier([ca.issuingPem], [], { from: 'subject-cn' });
    assert.equal((await issuingAnchor.verify([phone.certificatePem], now)).ok, true);
  });

  test('an untrusted issuer, a missing intermediate, a certificate outside its validity and one without the identity field are refused', async () => {
    const now = new Date();
    const reasons = [
      await verifier().verify([stranger.certificatePem, other.issuingPem], now),
      await verifier().verify([laptop.certificatePem], now),
      await verifier().verify([laptop.certificatePem, ca.issuingPem], new Date(now.getTime() + 40 * DAY_MS)),
      await verifier().verify([laptop.certificatePem, ca.issuingPem], new Date(now.getTime() - DAY_MS)),
      await verifier().verify([phone.certificatePem, ca.issuingPem], now),
      await verifier().verify([], now),
      await verifier().verify(['not a certificate'], now),
    ].map((verdict) => (verdict.ok ? 'accepted' : verdict.reason));
    assert.match(reasons[0] ?? '', /does not chain to a trust anchor/);
    assert.match(reasons[1] ?? '', /does not chain to a trust anchor/);
    assert.match(reasons[2] ?? '', /expired at/);
    assert.match(reasons[3] ?? '', /is not valid before/);
    assert.match(
      reasons[4] ?? '',
      /has no device id \(a subjectAltName URI starting with "urn:mdm:serial:" was expected\)/,
    );
    assert.match(reasons[5] ?? '', /no client certificate was presented/);
    assert.match(reasons[6] ?? '', /cannot be read/);
  });

  test('a certificate on its issuer’s revocation list is refused; a list signed by another CA is not believed', async () => {
    const revoked = ca.device('revoked', { cn: 'revoked', uri: 'urn:mdm:serial:R1' });
    // After issuing: the certificate's notBefore is the second it was signed in.
    const now = new Date();
    const before = verifier(
      undefined,
      [ca.writeCrl()].map((file) => readFileText(file)),
    );
    assert.equal((await before.verify([revoked.certificatePem, ca.issuingPem], now)).ok, true, 'not revoked yet');
    const crl = readFileText(ca.revoke(revoked.certificate));
    const verdict = await verifier(undefined, [crl]).verify([revoked.certificatePem, ca.issuingPem], now);
    assert.equal(
      verdict.ok ? 'accepted' : verdict.reason,
      `the client certificate (serial ${serialOf(revoked.certificatePem)}) is revoked`,
    );
    assert.equal(
      (await verifier(undefined, [crl]).verify([laptop.certificatePem, ca.issuingPem], now)).ok,
      true,
      'others stay valid',
    );
    // The same list refreshed into a verifier made without it.
    const refreshed = verifier();
    refreshed.replaceCrls([crl]);
    assert.equal((await refreshed.verify([revoked.certificatePem, ca.issuingPem], now)).ok, false);
    const forged = readFileText(other.writeCrl());
    assert.equal((await verifier(undefined, [forged]).verify([laptop.certificatePem, ca.issuingPem], now)).ok, true);
  });
});

test('a certificate of the MDM’s CA for another purpose (a TLS server, code signing) is refused; one without an extendedKeyUsage, or with any, passes', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const verifier = new ClientCertificateVerifier([ca.rootPem], [], { from: 'san-uri', prefix: 'urn:mdm:serial:' });
  const verdict = async (file: string, extendedKeyUsage: string | null) =>
    verifier.verify(
      [ca.device(file, { cn: file, uri: 'urn:mdm:serial:SER-1', extendedKeyUsage }).certificatePem, ca.issuingPem],
      new Date(),
    );
  for (const [file, usage] of [
    ['server', 'serverAuth'],
    ['signer', 'codeSigning'],
  ] as const) {
    const refused = await verdict(file, usage);
    assert.equal(refused.ok, false, `${usage} passed`);
    assert.match(refused.ok ? '' : refused.reason, /not for client authentication/);
  }
  for (const [file, usage] of [
    ['plain', null],
    ['any', 'anyExtendedKeyUsage'],
    ['both', 'serverAuth,clientAuth'],
  ] as const)
    assert.equal((await verdict(file, usage)).ok, true, `${usage ?? 'no extendedKeyUsage'} was refused`);
});

test('a device certificate under an issuing CA that the root’s revocation list revokes is refused, naming that CA', async () => {
  const ca = MdmCa.make('Compromised');
  try {
    const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:L1' });
    const rule: DeviceIdRule = { from: 'san-uri', prefix: 'urn:mdm:serial:' };
    const now = new Date();
    const presented = [laptop.certificatePem, ca.issuingPem];
    assert.equal((await new ClientCertificateVerifier([ca.rootPem], [], rule).verify(presented, now)).ok, true);

    const rootList = readFileText(ca.revokeIssuingCa());
    const verdict = await new ClientCertificateVerifier([ca.rootPem], [rootList], rule).verify(presented, now);
    assert.equal(
      verdict.ok ? 'accepted' : verdict.reason,
      `CA certificate "CN=Compromised Issuing CA" (serial ${serialOf(ca.issuingPem)}) of the client certificate's chain is revoked`,
    );
    // The same list with the issuing CA as the trust anchor: nothing above it to revoke it.
    const anchoredBelow = new ClientCertificateVerifier([ca.issuingPem], [rootList], rule);
    assert.equal((await anchoredBelow.verify([laptop.certificatePem], now)).ok, true);
  } finally {
    ca.remove();
  }
});

test('with intuneTenantId the certificate must carry Intune’s tenant extension with that tenant, read in Microsoft’s byte order', async () => {
  const ca = MdmCa.make('Intune');
  try {
    const tenant = '72f988bf-86f1-41af-91ab-2d7cd011db47';
    // The GUID's first three groups byte-reversed, the last 8 bytes as written, in an OCTET STRING.
    const der = '04:10:bf:88:f9:72:f1:86:af:41:91:ab:2d:7c:d0:11:db:47';
    const ours = ca.device('ours', { cn: `intune-${GUID}`, intuneTenantDer: der });
    const none = ca.device('none', { cn: `intune-${GUID}` });
    const rule = { from: 'subject-cn' } as const;
    const now = new Date();
    const verdict = await new ClientCertificateVerifier([ca.rootPem], [], rule, tenant.toUpperCase()).verify(
      [ours.certificatePem, ca.issuingPem],
      now,
    );
    assert.equal(verdict.ok && verdict.certificate.deviceId, GUID);
    const other = await new ClientCertificateVerifier(
      [ca.rootPem],
      [],
      rule,
      '00000000-0000-0000-0000-000000000001',
    ).verify([ours.certificatePem, ca.issuingPem], now);
    assert.equal(
      other.ok ? 'accepted' : other.reason,
      `the client certificate is of Intune tenant ${tenant}, not 00000000-0000-0000-0000-000000000001`,
    );
    const missing = await new ClientCertificateVerifier([ca.rootPem], [], rule, tenant).verify(
      [none.certificatePem, ca.issuingPem],
      now,
    );
    assert.equal(
      missing.ok ? 'accepted' : missing.reason,
      'the client certificate has no Intune tenant extension (1.2.840.113556.5.14)',
    );
    assert.equal(
      (await new ClientCertificateVerifier([ca.rootPem], [], rule).verify([none.certificatePem, ca.issuingPem], now))
        .ok,
      true,
      'not asked for: not needed',
    );
  } finally {
    ca.remove();
  }
});

function readFileText(file: string): string {
  return readFileSync(file, 'utf8');
}

function serialOf(pem: string): string {
  return new X509Certificate(pem).serialNumber.toLowerCase();
}

test('a revocation list of an issuing CA whose keyUsage lacks cRLSign is not believed: its certificates are refused, saying why', async () => {
  const ca = MdmCa.make('Certificates only', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign']);
  try {
    const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:L1' });
    const revoked = ca.device('revoked', { cn: 'revoked', uri: 'urn:mdm:serial:L2' });
    const rule: DeviceIdRule = { from: 'san-uri', prefix: 'urn:mdm:serial:' };
    const now = new Date();
    assert.equal(
      (await new ClientCertificateVerifier([ca.rootPem], [], rule).verify([laptop.certificatePem, ca.issuingPem], now))
        .ok,
      true,
      'without a list it signs certificates',
    );
    const list = readFileText(ca.revoke(revoked.certificate));
    const verifier = new ClientCertificateVerifier([ca.rootPem], [list], rule);
    for (const device of [laptop, revoked]) {
      const verdict = await verifier.verify([device.certificatePem, ca.issuingPem], now);
      assert.equal(
        verdict.ok ? 'accepted' : verdict.reason,
        `the revocation list of "CN=Certificates only Issuing CA" cannot be believed: that CA certificate's keyUsage lacks cRLSign`,
      );
    }
    const crl = readCrl(list);
    const issuing = readCaCertificates([ca.issuingPem]);
    assert.equal(await crlSignedBy(crl, issuing), false, 'the refresher believes it neither');
    assert.equal(await crlSignedByKeyOf(crl, issuing), true, 'though its key signed it');
    assert.deepEqual(await crlSigners(crl, issuing), []);
  } finally {
    ca.remove();
  }
});
