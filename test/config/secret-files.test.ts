// Files that hold a secret the portal reads at start: one rule for all of them. A private key
// or client secret that group or others may read is named at start — the certificate
// enrollment listener's key (enrollment.tls.key), the Apple profile signing key
// (apple.signingKey) and the MDM's client secret are warned of, the OpenID client secret
// refuses the start — and a file only its owner may read is not. The portal logs the warnings.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadPortalConfig } from '../../src/config/load.js';
import { capturedLog } from '../support/captured-log.js';
import { MdmCa } from '../support/mdm-ca.js';
import { makeSigningPki } from '../support/signing-pki.js';
import { startTestPortal } from '../support/test-portal.js';

const employees = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
};

test('an enrollment.tls.key, apple.signingKey or MDM client secret that others may read is warned of at start, each naming its option; mode 600 is not', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-secret-files-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const pki = await makeSigningPki('ec');
  t.after(() => pki.remove());
  copyFileSync(pki.signingCertificate, path.join(dir, 'signer.pem'));
  copyFileSync(pki.signingKey, path.join(dir, 'signer.key'));
  writeFileSync(path.join(dir, 'intune-secret'), 'the-secret\n');
  const enrollment = ca.mutualTlsEnrollment({});
  const tls = enrollment['tls'] as { key: string };
  copyFileSync(tls.key, path.join(dir, 'tls.key'));
  const file = path.join(dir, 'portal.json');
  writeFileSync(
    file,
    JSON.stringify({
      dataDir: '/var/lib/vpn-portal',
      ProfileList: [employees],
      enrollment: { ...enrollment, tls: { ...tls, key: 'tls.key' } },
      apple: { signingCertificate: 'signer.pem', signingKey: 'signer.key' },
      mdmInventory: {
        provider: 'intune',
        tenantId: '11111111-2222-3333-4444-555555555555',
        clientId: 'portal',
        clientSecretFile: 'intune-secret',
      },
    }),
  );
  const secrets = ['tls.key', 'signer.key', 'intune-secret'];

  for (const name of secrets) chmodSync(path.join(dir, name), 0o640);
  const warnings = loadPortalConfig(file).startWarnings;
  assert.deepEqual(warnings, [
    `enrollment.tls.key: ${path.join(dir, 'tls.key')} is readable by others (mode 0640); chmod 600 it`,
    `mdmInventory.clientSecretFile: ${path.join(dir, 'intune-secret')} is readable by others (mode 0640); chmod 600 it`,
    `apple.signingKey: ${path.join(dir, 'signer.key')} is readable by others (mode 0640); chmod 600 it`,
  ]);

  for (const name of secrets) chmodSync(path.join(dir, name), 0o600);
  assert.deepEqual(loadPortalConfig(file).startWarnings, []);
});

test('the portal logs each secret file warning at start', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const enrollment = ca.mutualTlsEnrollment({});
  const keyFile = (enrollment['tls'] as { key: string }).key;
  chmodSync(keyFile, 0o644);
  const log = capturedLog('warn');
  const portal = await startTestPortal({ logger: log.logger, config: { enrollment } });
  t.after(() => portal.close());
  assert.ok(
    log
      .lines()
      .some((line) => line.msg === `enrollment.tls.key: ${keyFile} is readable by others (mode 0644); chmod 600 it`),
    log.text(),
  );
});
