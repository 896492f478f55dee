// Sources that decide which devices are retired, read over plain http, are named at start.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { resolvePortalConfig } from '../../src/config/load.js';
import { plainHttpSourceWarnings } from '../../src/config/plain-http-sources.js';

const employees = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
};

function anchorFile(t: { after: (fn: () => void) => void }): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-config-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const file = path.join(directory, 'anchor.pem');
  writeFileSync(file, 'ANCHOR');
  return file;
}

const warningsFor = (document: Record<string, unknown>) =>
  plainHttpSourceWarnings(
    resolvePortalConfig({ dataDir: '/var/lib/vpn-portal', ProfileList: [employees], ...document }, 'portal.json'),
  );

test('an MDM inventory or a revocation list read over plain http is named at start; https and files are not', (t) => {
  const clientCertificate = {
    trustAnchors: [anchorFile(t)],
    deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
    trustedProxyList: ['127.0.0.1/32'],
  };
  const warnings = warningsFor({
    mdmInventory: { provider: 'json', url: 'http://mdm.example/devices.json' },
    enrollment: {
      clientCertificate: { ...clientCertificate, crl: ['https://pki.example/a.crl', 'HTTP://pki.example/b.crl'] },
    },
  });
  assert.deepEqual(warnings, [
    'mdmInventory.url is read over plain http (http://mdm.example/devices.json): anyone on the network path can answer in its place and retire devices. Use https if the server offers it.',
    'enrollment.clientCertificate.crl[1] is read over plain http (HTTP://pki.example/b.crl): anyone on the network path can replay an older list and keep a revoked device in until its nextUpdate. Use https if the server offers it.',
  ]);
  assert.deepEqual(
    warningsFor({
      mdmInventory: { provider: 'json', url: 'https://mdm.example/devices.json' },
      enrollment: { clientCertificate: { ...clientCertificate, crl: ['https://pki.example/a.crl'] } },
    }),
    [],
  );
  assert.deepEqual(warningsFor({}), [], 'nothing to warn about without an inventory or lists');
});
