// Two portal instances on one database read the same revocation list source. When one believes a
// newer list (revoking a certificate) and the other's reading is answered with the older list
// still (a mirror that has not caught up), the other puts the newer list in force all the same:
// the revoked certificate is refused by both instances, not only by the one that read it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { CrlServer, MdmCa, enrollOverTls, tlsEnrollUrl, type DeviceCertificateFiles } from '../../support/mdm-ca.js';
import { metricsText, startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('a newer revocation list believed by another portal instance', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let revoked: DeviceCertificateFiles;
  let olderList: string;
  let newerList: string;
  let served: string;
  const portals: TestPortal[] = [];
  let releaseHeld: () => void = () => {};

  before(() => {
    ca = MdmCa.make('Two Instances MDM');
    olderList = ca.writeCrl({ file: 'before.crl', thisUpdate: new Date(Date.now() - 3_600_000) });
    revoked = ca.device('trudy-laptop', { cn: 'trudy-laptop', uri: 'urn:mdm:serial:TWO-CRL-1' });
    newerList = ca.revoke(revoked.certificate);
    served = olderList;
  });

  after(async () => {
    releaseHeld();
    for (const portal of portals) await portal.close();
    await crls?.close();
    ca?.remove();
  });

  const start = async (database?: string): Promise<TestPortal> => {
    const portal = await startTestPortal({
      ...(database === undefined ? {} : { database }),
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crls.url], crlRefresh: 'PT1S' }),
      },
    });
    portals.push(portal);
    return portal;
  };
  const enroll = (portal: TestPortal) =>
    enrollOverTls(tlsEnrollUrl(portal), ca, revoked, { public_key: generateWireGuardKeyPair().publicKey });
  const pinnedThisUpdate = async (portal: TestPortal): Promise<string | undefined> =>
    (await portal.portal.ctx.db.selectFrom('revocation_list_sources').select('this_update').executeTakeFirst())
      ?.this_update;

  test('is put in force by the instance whose own reading still gets the older list', async () => {
    crls = await CrlServer.start(() => served);
    const lagging = await start();
    await lagging.admin.registerDevice({
      user_id: 'trudy',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'TWO-CRL-1',
    });
    await until('the older list believed', async () => (await pinnedThisUpdate(lagging)) !== undefined, 30_000);

    // The lagging instance's next reading is held (by the distribution point it asks, say) while
    // the other instance starts, reads the newer list and believes it.
    let held = -1;
    const first = crls.requests;
    crls.gate = async (ordinal) => {
      if (held !== -1 || ordinal < first) return;
      held = ordinal;
      await new Promise<void>((resolve) => {
        releaseHeld = resolve;
      });
    };
    await until('a reading of the lagging instance held', async () => held !== -1, 30_000);
    const olderPin = await pinnedThisUpdate(lagging);
    served = newerList;
    const reading = await start(lagging.database);
    await until('the newer list believed', async () => (await pinnedThisUpdate(reading)) !== olderPin, 30_000);
    const refusedThere = await enroll(reading);
    assert.equal(refusedThere.status, 403, refusedThere.text);

    // The held reading is answered with the older list: refused as older than the one believed.
    served = olderList;
    releaseHeld();
    await until(
      'the older list refused by the lagging instance',
      async () => /^vpn_portal_crl_refused_total\{reason="older"\} [1-9]/m.test(await metricsText(lagging)),
      30_000,
    );
    const refusedHere = await enroll(lagging);
    assert.equal(refusedHere.status, 403, refusedHere.text);
    assert.match(refusedHere.text, /revoked/);
  });
});
