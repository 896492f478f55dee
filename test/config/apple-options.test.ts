// The Apple options of the configuration file: `appleOnDemand` of a profile and the
// `apple.signing*` files. What would make every Apple profile wrong or unusable refuses the
// start, naming the option; relative paths are taken from the configuration file's folder.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { loadPortalConfig, resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { problemsOf } from '../support/config-problems.js';
import { makeSigningPki, type SigningPki } from '../support/signing-pki.js';
import { defaultTestConfig } from '../support/test-portal.js';

type ProfileFile = PortalConfigFile['ProfileList'][number];

const [employees] = defaultTestConfig.ProfileList as [ProfileFile];

function document(extra: Partial<PortalConfigFile> = {}, profile: Partial<ProfileFile> = {}): Record<string, unknown> {
  return { dataDir: '/var/lib/vpn-portal', ...extra, ProfileList: [{ ...employees, ...profile }] };
}

describe('appleOnDemand', () => {
  test('trusted Wi-Fi names and an https probe are taken; absent, the profile has none', () => {
    const config = resolvePortalConfig(
      document(
        {},
        { appleOnDemand: { trustedSsids: ['Office', 'Café ☕'], probeUrl: 'https://intranet.example.org/probe' } },
      ),
      'portal.json',
    );
    assert.deepEqual(config.profiles[0]?.appleOnDemand, {
      trustedSsids: ['Office', 'Café ☕'],
      probeUrl: 'https://intranet.example.org/probe',
    });
    assert.deepEqual(
      resolvePortalConfig(document({}, { appleOnDemand: {} }), 'portal.json').profiles[0]?.appleOnDemand,
      { trustedSsids: [], probeUrl: null },
    );
    assert.equal(resolvePortalConfig(document(), 'portal.json').profiles[0]?.appleOnDemand, null);
  });

  test('an empty SSID, one longer than 32 bytes, and a probe URL that is not https refuse the start, naming the option', () => {
    assert.match(
      problemsOf(document({}, { appleOnDemand: { trustedSsids: ['Office', ''] } })),
      /^portal\.json: ProfileList\[0\]\.appleOnDemand\.trustedSsids\[1\]: an SSID cannot be empty$/m,
    );
    assert.match(
      problemsOf(document({}, { appleOnDemand: { trustedSsids: ['é'.repeat(17)] } })),
      /ProfileList\[0\]\.appleOnDemand\.trustedSsids\[0\]: an SSID is at most 32 bytes/,
    );
    for (const probeUrl of ['http://intranet.example.org/probe', 'intranet.example.org', 'ftp://x.example.org/']) {
      assert.match(
        problemsOf(document({}, { appleOnDemand: { probeUrl } })),
        /^portal\.json: ProfileList\[0\]\.appleOnDemand\.probeUrl: must be an https:\/\/ URL$/m,
        probeUrl,
      );
    }
    assert.match(
      problemsOf(document({}, { appleOnDemand: { trustedSsid: ['Office'] } as never })),
      /ProfileList\[0\]\.appleOnDemand/,
      'a misspelt key',
    );
  });
});

describe('apple.signing*', () => {
  let pki: SigningPki;
  before(async () => {
    pki = await makeSigningPki('ec');
  });
  after(() => pki.remove());

  test("relative paths are taken from the configuration file's folder; the key never prints", (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-apple-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    for (const [from, to] of [
      [pki.signingCertificate, 'signer.pem'],
      [pki.signingKey, 'signer.key'],
      [pki.chain, 'chain.pem'],
    ] as const) {
      copyFileSync(from, path.join(dir, to));
    }
    const file = path.join(dir, 'portal.json');
    writeFileSync(
      file,
      JSON.stringify(
        document({ apple: { signingCertificate: 'signer.pem', signingKey: 'signer.key', signingChain: 'chain.pem' } }),
      ),
    );
    const signing = loadPortalConfig(file).appleSigning;
    assert.ok(signing !== null);
    assert.match(signing.certificate, /^-----BEGIN CERTIFICATE-----/);
    assert.equal(signing.chain.length, 1);
    assert.doesNotMatch(`${inspect(signing)} ${JSON.stringify(signing)}`, /PRIVATE KEY/);
    assert.equal(
      resolvePortalConfig(document(), 'portal.json').appleSigning,
      null,
      'without the options profiles go out unsigned',
    );
  });

  test("a key that is not the certificate's refuses the start, naming apple.signingKey", () => {
    const problems = problemsOf(
      document({ apple: { signingCertificate: pki.signingCertificate, signingKey: pki.otherKey } }),
    );
    assert.match(
      problems,
      /^portal\.json: apple\.signingKey: .*other\.key is not the key of the certificate in apple\.signingCertificate$/m,
    );
    assert.doesNotMatch(problems, /PRIVATE KEY/);
  });

  test('an expired certificate refuses the start, naming apple.signingCertificate', () => {
    assert.match(
      problemsOf(document({ apple: { signingCertificate: pki.expiredCertificate, signingKey: pki.signingKey } })),
      /^portal\.json: apple\.signingCertificate: the certificate expired on \d{4}-/m,
    );
  });

  test('half the options, a missing file, a file that is not PEM, or a chain that did not issue the certificate refuse the start', () => {
    assert.match(
      problemsOf(document({ apple: { signingCertificate: pki.signingCertificate } })),
      /apple\.signingKey: signing needs both/,
    );
    assert.match(
      problemsOf(document({ apple: { signingChain: pki.chain } })),
      /apple\.signingCertificate: signing needs both/,
    );
    assert.match(
      problemsOf(document({ apple: { signingCertificate: '/nonexistent/cert.pem', signingKey: pki.signingKey } })),
      /apple\.signingCertificate: cannot read \/nonexistent\/cert\.pem \(ENOENT\)/,
    );
    assert.match(
      problemsOf(document({ apple: { signingCertificate: pki.signingKey, signingKey: pki.signingKey } })),
      /apple\.signingCertificate: is not a PEM certificate/,
    );
    assert.match(
      problemsOf(
        document({ apple: { signingCertificate: pki.signingCertificate, signingKey: pki.signingCertificate } }),
      ),
      /apple\.signingKey: is not an unencrypted PEM private key/,
    );
    assert.match(
      problemsOf(
        document({
          apple: {
            signingCertificate: pki.signingCertificate,
            signingKey: pki.signingKey,
            signingChain: pki.rootCertificate,
          },
        }),
      ),
      /apple\.signingChain: its first certificate \(CN=Test Root\) did not issue the signing certificate/,
    );
  });
});
