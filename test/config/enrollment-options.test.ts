// `enrollment.clientCertificate.registerAs`: a profile the portal does not have refuses the start
// naming the option, rather than every device that registers itself getting a 404 that blames
// its request; a profile it has is taken.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { resolvePortalConfig } from '../../src/config/load.js';
import { problemsOf } from '../support/config-problems.js';
import { defaultTestConfig } from '../support/test-portal.js';

function withRegisterAs(t: { after: (fn: () => void) => void }, profileId: string) {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-config-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const anchor = path.join(directory, 'anchor.pem');
  writeFileSync(anchor, 'ANCHOR');
  return {
    ...defaultTestConfig,
    enrollment: {
      clientCertificate: {
        trustAnchors: [anchor],
        deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
        registerAs: { from: 'san-email', profileId },
      },
    },
  };
}

test('registerAs.profileId must name a profile the portal has', (t) => {
  assert.match(
    problemsOf(withRegisterAs(t, 'staff')),
    /enrollment\.clientCertificate\.registerAs\.profileId: there is no profile "staff" \(profiles: employees\)/,
  );
  const taken = resolvePortalConfig(withRegisterAs(t, 'employees'), 'portal.json');
  assert.equal(taken.enrollment.clientCertificate?.registerAs?.profileId, 'employees');
});
