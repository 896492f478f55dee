// A device whose certificate appears on a revocation list is retired (issue 23, item 4), with a
// test CA made at run time with openssl and its list served over http as a distribution point
// would: the device bound to the revoked certificate is retired within one crlRefresh, with a
// receipt and an audit row naming its user; a device that replaced a revoked certificate by a
// new one stays; a list that cannot be fetched keeps the last good one, is flagged in the
// metrics and retires nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { CrlServer, MdmCa, enrollOverTls, type DeviceCertificateFiles } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const REFRESH_MS = 1000;

describe('a device whose certificate is revoked is retired', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let portal: TestPortal;

  before(async () => {
    ca = MdmCa.make();
    const crlFile = ca.writeCrl();
    crls = await CrlServer.start(() => crlFile);
    portal = await startTestPortal({
      config: { enrollment: ca.mutualTlsEnrollment({ crl: [crls.url], crlRefresh: 'PT1S' }) },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    ca?.remove();
  });

  const enrollUrl = () => `${portal.portal.enrollTlsUrl ?? ''}${portal.portal.ctx.config.basePath}/enroll`;

  async function enrolled(
    user: string,
    serial: string,
    file: string,
  ): Promise<{ deviceId: string; certificate: DeviceCertificateFiles }> {
    const device = await portal.admin.registerDevice({
      user_id: user,
      profile_id: 'employees',
      platform: 'linux',
      serial,
    });
    const certificate = ca.device(file, { cn: file, uri: `urn:mdm:serial:${serial}` });
    const answer = await enrollOverTls(enrollUrl(), ca, certificate, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(answer.status, 200, answer.text);
    return { deviceId: device.device_id, certificate };
  }

  async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) assert.fail(`${what} within ${ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const metrics = async () => (await fetch(portal.portal.metricsUrl ?? '')).text();
  const sample = (text: string, name: string) =>
    Number(
      new RegExp(`^${name}\\{file="${crls.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\} (\\S+)$`, 'm').exec(
        text,
      )?.[1],
    );

  test('the device bound to the revoked certificate is retired within one refresh, with a receipt and an audit row naming its user', async () => {
    const { deviceId, certificate } = await enrolled('alice', 'CRL-1', 'alice-laptop');
    const bystander = await enrolled('bob', 'CRL-2', 'bob-laptop');
    ca.revoke(certificate.certificate);
    const revokedAt = Date.now();
    await until(
      'the device retired',
      async () => (await portal.admin.device(deviceId)).state === 'retired',
      3 * REFRESH_MS + 2000,
    );
    assert.ok(Date.now() - revokedAt <= 2 * REFRESH_MS + 2000, 'within about one refresh (and the fetch)');
    const device = await portal.admin.device(deviceId);
    assert.deepEqual(device.configurations, []);
    assert.equal(
      (await portal.admin.device(bystander.deviceId)).state,
      'active',
      'a device of another certificate stays',
    );

    const rows = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter(
      (row) => row.call === 'retire_device',
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.keyName, '(portal)');
    assert.equal(rows[0]?.userId, 'alice');
    assert.equal(rows[0]?.parameters['device_id'], deviceId);
    assert.equal(rows[0]?.connectionIds.length, 1);
    const receipts = await portal.portal.ctx.db.selectFrom('revocations').selectAll().execute();
    assert.ok(receipts.length >= 1, 'the revocation has a receipt');
    assert.equal(sample(await metrics(), 'vpn_portal_crl_entries'), 1);
  });

  test('a certificate the device has since replaced may be revoked: the device stays', async () => {
    const { deviceId, certificate } = await enrolled('carol', 'CRL-3', 'carol-old');
    const renewed = ca.device('carol-new', { cn: 'carol-new', uri: 'urn:mdm:serial:CRL-3' });
    const again = await enrollOverTls(enrollUrl(), ca, renewed, { public_key: generateWireGuardKeyPair().publicKey });
    assert.equal(again.status, 200, again.text);
    ca.revoke(certificate.certificate);
    await until(
      'the list with the old certificate read',
      async () => sample(await metrics(), 'vpn_portal_crl_entries') === 2,
      5000,
    );
    await new Promise((resolve) => setTimeout(resolve, 2 * REFRESH_MS));
    assert.equal((await portal.admin.device(deviceId)).state, 'active');
  });

  test('a list that cannot be fetched keeps the last good one, is flagged in the metrics, and retires nothing', async () => {
    const { deviceId } = await enrolled('dave', 'CRL-4', 'dave-laptop');
    const before = await portal.admin.devices();
    crls.failing = true;
    await until('the failure flagged', async () => sample(await metrics(), 'vpn_portal_crl_read_failing') === 1, 5000);
    await new Promise((resolve) => setTimeout(resolve, 2 * REFRESH_MS));
    assert.equal(sample(await metrics(), 'vpn_portal_crl_entries'), 2, 'the last good list stays in use');
    assert.deepEqual(await portal.admin.devices(), before);
    assert.equal((await portal.admin.device(deviceId)).state, 'active');
    crls.failing = false;
    await until('read again', async () => sample(await metrics(), 'vpn_portal_crl_read_failing') === 0, 5000);
  });
});
