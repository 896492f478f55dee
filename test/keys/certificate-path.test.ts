// RFC 5280's rules for a certificate path, as the check of a device's MDM certificate holds its
// chain to them (with test CAs made at run time with openssl): a CA under a CA whose
// pathLenConstraint allows none is refused (a self-issued one is not counted), a CA whose
// keyUsage does not allow signing certificates signs none, and a certificate with a critical
// extension the portal does not process, or a CA with nameConstraints, is refused, as are a trust
// anchor that is no CA and a leaf whose keyUsage neither signs nor agrees on keys, while the
// extensions MDMs write (critical keyUsage, Intune's tenant, non-critical unknown ones) pass.
// A CA that signs revocation lists is held to the very rules a device chain through it keeps, and
// a trust anchor that vouches for nothing is told apart before any device presents a chain.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import {
  type ClientCertificateVerdict,
  ClientCertificateVerifier,
  readCaCertificates,
  trustAnchorStandings,
} from '../../src/keys/client-certificate.js';
import { CA_EXTENSIONS, MdmCa } from '../support/mdm-ca.js';

const RULE = { from: 'san-uri', prefix: 'urn:mdm:serial:' } as const;

/** The verdict on `presented` (the leaf first) against these trust anchors: 'accepted', or the reason. */
async function verdictOf(anchors: readonly string[], presented: readonly string[]): Promise<string> {
  const verdict: ClientCertificateVerdict = await new ClientCertificateVerifier(anchors, [], RULE).verify(
    presented,
    new Date(),
  );
  return verdict.ok ? 'accepted' : verdict.reason;
}

/** A test CA whose issuing CA has `issuingExtensions`, removed after the test. */
function caFor(t: TestContext, name: string, issuingExtensions: readonly string[]): MdmCa {
  const ca = MdmCa.make(name, issuingExtensions);
  t.after(() => ca.remove());
  return ca;
}

test('a device certificate from a CA under an issuing CA whose pathLenConstraint is 0 is refused; one from a self-issued CA of the issuing CA’s own name passes', async (t) => {
  const ca = caFor(t, 'Pathlen', [
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const direct = ca.device('direct', { cn: 'direct', uri: 'urn:mdm:serial:P0' });
  assert.equal(await verdictOf([ca.rootPem], [direct.certificatePem, ca.issuingPem]), 'accepted');

  const below = ca.subordinateCa('below', 'Pathlen Department CA');
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:P1', issuedBy: below });
  assert.equal(
    await verdictOf([ca.rootPem], [laptop.certificatePem, below.certificatePem, ca.issuingPem]),
    `CA certificate "CN=Pathlen Issuing CA" of the client certificate's chain allows 0 intermediate CA certificates below it (pathLenConstraint), but the chain has 1`,
  );
  // The issuing CA is the trust anchor itself: its pathLenConstraint still holds, as OpenSSL holds it.
  assert.match(
    await verdictOf([ca.issuingPem], [laptop.certificatePem, below.certificatePem]),
    /^trust anchor "CN=Pathlen Issuing CA" allows 0 intermediate CA certificates below it/,
  );

  // The issuing CA's name over a new key (a key rollover) is self-issued: RFC 5280 does not count it.
  const rollover = ca.subordinateCa('rollover', 'Pathlen Issuing CA');
  const phone = ca.device('phone', { cn: 'phone', uri: 'urn:mdm:serial:P2', issuedBy: rollover });
  assert.equal(
    await verdictOf([ca.rootPem], [phone.certificatePem, rollover.certificatePem, ca.issuingPem]),
    'accepted',
  );
});

test('an issuing CA whose keyUsage allows only digitalSignature cannot sign device certificates; one without a keyUsage can', async (t) => {
  const ca = caFor(t, 'Signer', ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,digitalSignature']);
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:K1' });
  assert.equal(
    await verdictOf([ca.rootPem], [laptop.certificatePem, ca.issuingPem]),
    `CA certificate "CN=Signer Issuing CA" of the client certificate's chain may not sign certificates (its keyUsage lacks keyCertSign)`,
  );
  assert.equal(
    await verdictOf([ca.issuingPem], [laptop.certificatePem]),
    'trust anchor "CN=Signer Issuing CA" may not sign certificates (its keyUsage lacks keyCertSign)',
  );

  const plain = caFor(t, 'Plain', ['basicConstraints=critical,CA:TRUE']);
  const phone = plain.device('phone', { cn: 'phone', uri: 'urn:mdm:serial:K2' });
  assert.equal(await verdictOf([plain.rootPem], [phone.certificatePem, plain.issuingPem]), 'accepted');
});

test('a device certificate with an extension the portal does not know is refused when it is critical and passes when it is not', async (t) => {
  const ca = caFor(t, 'Extensions', CA_EXTENSIONS);
  const verdict = async (file: string, extensions: readonly string[]) =>
    verdictOf(
      [ca.rootPem],
      [ca.device(file, { cn: file, uri: `urn:mdm:serial:${file}`, extensions }).certificatePem, ca.issuingPem],
    );
  assert.equal(
    await verdict('critical', ['1.3.6.1.4.1.55555.1=critical,ASN1:NULL']),
    'the client certificate has a critical extension the portal does not process (1.3.6.1.4.1.55555.1)',
  );
  assert.equal(await verdict('noncritical', ['1.3.6.1.4.1.55555.1=ASN1:NULL']), 'accepted');
  // As Intune and Jamf Pro write device certificates: a critical keyUsage, a critical
  // certificatePolicies, Intune's tenant and Microsoft's template name, not critical.
  assert.equal(
    await verdict('mdm', [
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'certificatePolicies=critical,1.3.6.1.4.1.311.21.8.1',
      '1.2.840.113556.5.14=DER:04:10:bf:88:f9:72:f1:86:af:41:91:ab:2d:7c:d0:11:db:47',
      '1.3.6.1.4.1.311.20.2=ASN1:BMPSTRING:Intune',
    ]),
    'accepted',
  );
});

test('a CA of the chain with a critical policyConstraints, or with nameConstraints critical or not, is refused, naming the CA', async (t) => {
  const policy = caFor(t, 'Policy', [...CA_EXTENSIONS, 'policyConstraints=critical,requireExplicitPolicy:0']);
  const laptop = policy.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:C1' });
  assert.equal(
    await verdictOf([policy.rootPem], [laptop.certificatePem, policy.issuingPem]),
    `CA certificate "CN=Policy Issuing CA" of the client certificate's chain has a critical extension the portal does not process (policyConstraints, 2.5.29.36)`,
  );
  for (const [name, constraint] of [
    ['Critical names', 'nameConstraints=critical,permitted;URI:.example.org'],
    ['Names', 'nameConstraints=permitted;URI:.example.org'],
  ] as const) {
    const ca = caFor(t, name, [...CA_EXTENSIONS, constraint]);
    const phone = ca.device('phone', { cn: 'phone', uri: 'urn:mdm:serial:C2' });
    assert.equal(
      await verdictOf([ca.rootPem], [phone.certificatePem, ca.issuingPem]),
      `CA certificate "CN=${name} Issuing CA" of the client certificate's chain has nameConstraints (2.5.29.30), which the portal does not enforce`,
    );
  }
  // A trust anchor's critical extension counts too, as OpenSSL counts it.
  const anchor = caFor(t, 'Anchor', [...CA_EXTENSIONS, '1.3.6.1.4.1.55555.2=critical,ASN1:NULL']);
  const tablet = anchor.device('tablet', { cn: 'tablet', uri: 'urn:mdm:serial:C3' });
  assert.equal(
    await verdictOf([anchor.issuingPem], [tablet.certificatePem]),
    'trust anchor "CN=Anchor Issuing CA" has a critical extension the portal does not process (1.3.6.1.4.1.55555.2)',
  );
});

test("a device's own certificate configured as a trust anchor vouches for no certificate its key signs", async (t) => {
  const ca = caFor(t, 'Mistaken', CA_EXTENSIONS);
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:A1' });
  // Whoever holds the laptop's key signs a certificate naming another device.
  const minted = ca.device('minted', { cn: 'minted', uri: 'urn:mdm:serial:A2', issuedBy: laptop });
  assert.equal(
    await verdictOf([laptop.certificatePem], [minted.certificatePem]),
    'trust anchor "CN=laptop" is not a CA certificate (its basicConstraints say CA:FALSE)',
  );
});

test('a device certificate whose keyUsage allows only encryption does not prove a device; one that may sign does', async (t) => {
  const ca = caFor(t, 'Usages', CA_EXTENSIONS);
  const verdict = async (file: string, keyUsage: string) =>
    verdictOf(
      [ca.rootPem],
      [
        ca.device(file, { cn: file, uri: `urn:mdm:serial:${file}`, extensions: [`keyUsage=critical,${keyUsage}`] })
          .certificatePem,
        ca.issuingPem,
      ],
    );
  assert.equal(
    await verdict('encrypting', 'keyEncipherment,dataEncipherment'),
    'the client certificate is not for client authentication (its keyUsage names neither digitalSignature nor keyAgreement)',
  );
  assert.equal(await verdict('signing', 'digitalSignature'), 'accepted');
  assert.equal(await verdict('agreeing', 'keyAgreement'), 'accepted');
});

/** What the verifier makes of the CA in `pem` as a signer, through these intermediates, against these trust anchors. */
async function standingOf(anchors: readonly string[], pem: string, intermediates: readonly string[] = []) {
  const [ca] = readCaCertificates([pem]);
  assert.ok(ca);
  return new ClientCertificateVerifier(anchors, [], RULE).standingOf(ca, readCaCertificates(intermediates));
}

test('a CA whose device certificates the chain rules refuse vouches for no revocation list either, for the same rule', async (t) => {
  const pathlen = caFor(t, 'Lists pathlen', [
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const department = pathlen.subordinateCa('department', 'Lists Department CA');
  const laptop = pathlen.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:L1', issuedBy: department });
  const tooDeep = `CA certificate "CN=Lists pathlen Issuing CA" allows 0 intermediate CA certificates below it (pathLenConstraint), but the chain has 1`;
  assert.equal(
    await verdictOf([pathlen.rootPem], [laptop.certificatePem, department.certificatePem, pathlen.issuingPem]),
    tooDeep.replace('"CN=Lists pathlen Issuing CA"', `"CN=Lists pathlen Issuing CA" of the client certificate's chain`),
  );
  assert.deepEqual(await standingOf([pathlen.rootPem], department.certificatePem, [pathlen.issuingPem]), {
    standing: 'breaks-path-rule',
    rule: tooDeep,
  });
  // The issuing CA itself has no CA below it: it vouches, as a device chain through it passes.
  assert.deepEqual(await standingOf([pathlen.rootPem], pathlen.issuingPem), { standing: 'vouches' });

  for (const [name, extensions, rule] of [
    [
      'Lists cert sign',
      ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,cRLSign'],
      'may not sign certificates (its keyUsage lacks keyCertSign)',
    ],
    [
      'Lists critical',
      [...CA_EXTENSIONS, '1.3.6.1.4.1.55555.3=critical,ASN1:NULL'],
      'has a critical extension the portal does not process (1.3.6.1.4.1.55555.3)',
    ],
    [
      'Lists names',
      [...CA_EXTENSIONS, 'nameConstraints=permitted;URI:.example.org'],
      'has nameConstraints (2.5.29.30), which the portal does not enforce',
    ],
    [
      'Lists not CA',
      ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,keyCertSign,cRLSign'],
      'is not a CA certificate (its basicConstraints say CA:FALSE)',
    ],
  ] as const) {
    const ca = caFor(t, name, extensions);
    assert.deepEqual(await standingOf([ca.rootPem], ca.issuingPem), {
      standing: 'breaks-path-rule',
      rule: `CA certificate "CN=${name} Issuing CA" ${rule}`,
    });
    const phone = ca.device('phone', { cn: 'phone', uri: 'urn:mdm:serial:L2' });
    assert.notEqual(await verdictOf([ca.rootPem], [phone.certificatePem, ca.issuingPem]), 'accepted');
  }
  const stranger = caFor(t, 'Lists stranger', CA_EXTENSIONS);
  assert.deepEqual(await standingOf([pathlen.rootPem], stranger.issuingPem), { standing: 'no-anchor' });
});

test('the trust anchors that vouch for nothing are told apart before any device presents a chain, each with its rule', async (t) => {
  const good = caFor(t, 'Anchors good', CA_EXTENSIONS);
  const constrained = caFor(t, 'Anchors names', [...CA_EXTENSIONS, 'nameConstraints=permitted;URI:.example.org']);
  const laptop = good.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:T1' });
  const limited = caFor(t, 'Anchors pathlen', [
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const standings = trustAnchorStandings([
    good.rootPem,
    `${constrained.issuingPem}${laptop.certificatePem}`,
    limited.issuingPem,
  ]);
  assert.deepEqual(
    standings.map(({ entry, subject, refusedBy }) => ({ entry, subject, refusedBy })),
    [
      { entry: 0, subject: 'CN=Anchors good Root', refusedBy: null },
      {
        entry: 1,
        subject: 'CN=Anchors names Issuing CA',
        refusedBy:
          'trust anchor "CN=Anchors names Issuing CA" has nameConstraints (2.5.29.30), which the portal does not enforce',
      },
      {
        entry: 1,
        subject: 'CN=laptop',
        refusedBy: 'trust anchor "CN=laptop" is not a CA certificate (its basicConstraints say CA:FALSE)',
      },
      // A pathLenConstraint limits what is below an anchor, not the anchor itself.
      { entry: 2, subject: 'CN=Anchors pathlen Issuing CA', refusedBy: null },
    ],
  );
  assert.match(standings[1]?.sha256 ?? '', /^[0-9a-f]{64}$/);
});
