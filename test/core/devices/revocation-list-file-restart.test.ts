// A revocation list read from a file holds across a restart as one read from a URL does: when the
// file holds an older list of the same CA at the next start (a backup put back, a job that copies
// the distribution point's list and was answered with an old one), the newest list believed from
// it before stays in force, so a certificate it revokes is refused from the first request on.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { MdmCa, enrollOverTls, tlsEnrollUrl, type DeviceCertificateFiles } from '../../support/mdm-ca.js';
import { metricsText, startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('an older list put in a revocation list file before a restart', () => {
  let ca: MdmCa;
  let dataDir: string;
  let listFile: string;
  let olderList: string;
  let newerList: string;
  let revoked: DeviceCertificateFiles;
  const portals: TestPortal[] = [];

  before(() => {
    ca = MdmCa.make('File MDM');
    // A genuine list of an hour ago, still current: from before the revocation below.
    olderList = ca.writeCrl({ file: 'before.crl', thisUpdate: new Date(Date.now() - 3_600_000) });
    revoked = ca.device('mallory-laptop', { cn: 'mallory-laptop', uri: 'urn:mdm:serial:FILE-1' });
    newerList = ca.revoke(revoked.certificate);
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-crl-file-'));
    listFile = path.join(dataDir, 'issuing.crl');
    copyFileSync(newerList, listFile);
  });

  after(async () => {
    for (const portal of portals) await portal.close();
    ca?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (): Promise<TestPortal> => {
    // The same data folder: the same database each time.
    const portal = await startTestPortal({
      dataDir,
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [listFile], crlRefresh: 'PT1S' }),
      },
    });
    portals.push(portal);
    return portal;
  };
  const enroll = (portal: TestPortal) =>
    enrollOverTls(tlsEnrollUrl(portal), ca, revoked, { public_key: generateWireGuardKeyPair().publicKey });

  test('keeps the revoked certificate refused: the list believed before stays in force, and the older one is refused', async () => {
    const first = await start();
    await first.admin.registerDevice({
      user_id: 'mallory',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'FILE-1',
    });
    await until(
      'the list revoking the certificate believed',
      async () =>
        (await first.portal.ctx.db.selectFrom('revocation_list_sources').select('issuer').execute()).length > 0,
      30_000,
    );
    const refused = await enroll(first);
    assert.equal(refused.status, 403, refused.text);
    await first.close();

    copyFileSync(olderList, listFile);
    const second = await start();
    const atOnce = await enroll(second);
    assert.equal(atOnce.status, 403, atOnce.text);
    assert.match(atOnce.text, /revoked/);
    // Once the file is read again and its older list refused, the certificate is still refused.
    await until(
      'the older list refused',
      async () => (await metricsText(second)).includes('vpn_portal_crl_refused_total{reason="older"} 1'),
      30_000,
    );
    const later = await enroll(second);
    assert.equal(later.status, 403, later.text);
    assert.match(later.text, /revoked/);
  });
});
