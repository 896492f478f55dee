// `vpn-portal admin create` for Apple devices: --platform and --on-demand reach the portal, a
// signed profile (DER) is written to -o FILE byte for byte and refused on the terminal, and
// values the portal would refuse are usage mistakes (exit code 2) before anything is sent.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'plist';
import { runCli } from '../support/portal-process.js';
import { makeSigningPki } from '../support/signing-pki.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

function admin(portal: TestPortal, args: readonly string[]) {
  return runCli(['admin', ...args], {
    env: {
      VPN_PORTAL_URL: `${portal.portal.url}/vpn-user-portal/`,
      VPN_PORTAL_KEY_FILE: portal.portal.ctx.keys.adminApiKeyPath,
    },
  });
}

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-admin-apple-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('create --platform macos --on-demand yes writes a macOS profile that connects on demand; bad values are usage mistakes', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const file = path.join(tempDir(t), 'mac.mobileconfig');
  const created = await admin(portal, [
    'create',
    'alice',
    'employees',
    '--format',
    'apple',
    '--platform',
    'macos',
    '--on-demand',
    'yes',
    '-o',
    file,
  ]);
  assert.equal(created.code, 0, created.stderr);
  const [vpn] = (
    parse(readFileSync(file, 'utf8')) as unknown as {
      PayloadContent: { VPNSubType: string; VPN: { OnDemandRules: unknown } }[];
    }
  ).PayloadContent;
  assert.equal(vpn?.VPNSubType, 'com.wireguard.macos');
  assert.deepEqual(vpn?.VPN.OnDemandRules, [{ Action: 'Connect' }]);

  const platform = await admin(portal, ['create', 'bob', 'employees', '--platform', 'ipados']);
  assert.equal(platform.code, 2);
  assert.match(platform.stderr, /--platform must be ios, macos, windows, android, linux or other, not "ipados"/);
  const onDemand = await admin(portal, ['create', 'bob', 'employees', '--on-demand', 'maybe']);
  assert.equal(onDemand.code, 2);
  assert.match(onDemand.stderr, /--on-demand must be yes or no/);
  const refused = await admin(portal, ['create', 'bob', 'employees', '--format', 'apple', '--platform', 'android']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /406 no common VPN protocol .*platform "android" takes/);
  assert.deepEqual(await portal.admin.users(), ['alice'], 'nothing made for bob');
});

test('a signed profile goes to -o FILE as DER that openssl accepts; without -o it is refused', async (t) => {
  const pki = await makeSigningPki('ec');
  t.after(() => pki.remove());
  const portal = await startTestPortal({
    config: {
      apple: { signingCertificate: pki.signingCertificate, signingKey: pki.signingKey, signingChain: pki.chain },
    },
  });
  t.after(portal.close);
  const file = path.join(tempDir(t), 'phone.mobileconfig');
  const created = await admin(portal, ['create', 'alice', 'employees', '--format', 'apple', '-o', file]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(await pki.verify(readFileSync(file)), /<string>com\.wireguard\.ios<\/string>/);
  const toTerminal = await admin(portal, ['create', 'bob', 'employees', '--format', 'apple']);
  assert.equal(toTerminal.code, 2);
  assert.match(toTerminal.stderr, /the answer is binary .*give -o FILE/);
});
