// Who may forward a client certificate is its own option, enrollment.clientCertificate's
// trustedProxyList (empty unless set), with the header that says the proxy verified it; a
// configuration that relies on adminApi.trustedProxyList for it, as once, is told so at start.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { forwardedCertificateWarning } from '../../src/config/forwarded-certificate.js';
import { resolvePortalConfig } from '../../src/config/load.js';
import { problemsOf } from '../support/config-problems.js';

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

function document(enrollment: Record<string, unknown>, adminApi: Record<string, unknown> = {}) {
  return { dataDir: '/var/lib/vpn-portal', ProfileList: [employees], adminApi, enrollment };
}

test('a forwarded client certificate is believed from nobody unless trustedProxyList names the proxy, and its verdict is read from X-SSL-Client-Verify unless set', (t) => {
  const deviceId = { from: 'san-uri', prefix: 'urn:mdm:serial:' };
  const clientCertificate = { trustAnchors: [anchorFile(t)], deviceId };
  const defaults = resolvePortalConfig(document({ clientCertificate }), 'portal.json').enrollment.clientCertificate;
  assert.deepEqual(defaults?.trustedProxyList, []);
  assert.equal(defaults?.header, 'X-SSL-Client-Cert');
  assert.equal(defaults?.verifiedHeader, 'X-SSL-Client-Verify');
  const set = resolvePortalConfig(
    document({
      clientCertificate: { ...clientCertificate, trustedProxyList: ['127.0.0.1/32'], verifiedHeader: 'X-Verified' },
    }),
    'portal.json',
  ).enrollment.clientCertificate;
  assert.deepEqual(set?.trustedProxyList, ['127.0.0.1/32']);
  assert.equal(set?.verifiedHeader, 'X-Verified');
  assert.match(
    problemsOf(document({ clientCertificate: { ...clientCertificate, trustedProxyList: ['proxy'] } })),
    /^portal\.json: enrollment\.clientCertificate\.trustedProxyList\[0\]: "proxy" is not an IP prefix/,
  );
  assert.match(
    problemsOf(document({ clientCertificate: { ...clientCertificate, verifiedHeader: 'X Verified' } })),
    /enrollment\.clientCertificate\.verifiedHeader/,
  );
});

test('certificate enrollment that only a proxy could serve, with no proxy trusted to forward, is named at start, and adminApi.trustedProxyList is said not to count', (t) => {
  const clientCertificate = { trustAnchors: [anchorFile(t)], deviceId: { from: 'san-uri' } };
  const warning = (enrollment: Record<string, unknown>, adminApi: Record<string, unknown> = {}) =>
    forwardedCertificateWarning(resolvePortalConfig(document(enrollment, adminApi), 'portal.json'));

  const formerly = warning({ clientCertificate }, { trustedProxyList: ['127.0.0.1/32'] });
  assert.match(
    formerly ?? '',
    /enrollment\.clientCertificate\.trustedProxyList is empty: no forwarded certificate is believed/,
  );
  assert.match(formerly ?? '', /A proxy in adminApi\.trustedProxyList no longer counts for this/);
  assert.match(formerly ?? '', /X-SSL-Client-Cert and X-SSL-Client-Verify/);
  assert.doesNotMatch(warning({ clientCertificate }) ?? '', /adminApi/);
  assert.notEqual(warning({ clientCertificate }), null);
  assert.equal(warning({ clientCertificate: { ...clientCertificate, trustedProxyList: ['127.0.0.1/32'] } }), null);
  assert.equal(warning({}, { trustedProxyList: ['127.0.0.1/32'] }), null);
  assert.equal(
    warning(
      {
        clientCertificate,
        tls: {
          listen: '127.0.0.1:8443',
          certificate: clientCertificate.trustAnchors[0],
          key: clientCertificate.trustAnchors[0],
        },
      },
      { trustedProxyList: ['127.0.0.1/32'] },
    ),
    null,
    'with its own mutual-TLS listener the portal needs no proxy',
  );
});
