// A revocation list lent to enrollment (its CA not known yet) that is past its nextUpdate proves
// nothing about now, as one in force does not: while its source's answers are withheld, a
// certificate the CA revoked since must not enroll on it. Its CA's certificates wait (503) until a
// current list of that CA checks them, also when another source's current list of a CA higher in
// the chain is in force.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import {
  CrlServer,
  MdmCa,
  enrollOverTls,
  type DeviceCertificateFiles,
  type TlsAnswer,
  tlsEnrollUrl,
} from '../../support/mdm-ca.js';
import { shiftedClock, type ShiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

const HOUR_MS = 3_600_000;

/** Waits until the source at `url` gave a list refused because its CA is not known yet, which is lent to enrollment. */
async function untilLent(portal: TestPortal, url: string): Promise<void> {
  await until(
    'the list refused while its CA is not known, and lent',
    async () => /^vpn_portal_crl_refused_total\{reason="unknown-issuer"\} [1-9]/m.test(await metricsText(portal)),
    30_000,
  );
  assert.ok((await metricsText(portal)).includes(`vpn_portal_crl_read_failing{file="${url}"} 1`));
}

function enroll(portal: TestPortal, ca: MdmCa, device: DeviceCertificateFiles): Promise<TlsAnswer> {
  return enrollOverTls(tlsEnrollUrl(portal), ca, device, { public_key: generateWireGuardKeyPair().publicKey });
}

function assertWaitsForCurrentList(answer: TlsAnswer, url: string): void {
  assert.equal(answer.status, 503, answer.text);
  assert.equal(answer.headers['retry-after'], '60');
  assert.ok(answer.text.includes(`the revocation list ${url} (nextUpdate `), answer.text);
  assert.ok(answer.text.includes('has expired and no newer one could be read yet'), answer.text);
}

/** An MDM CA whose list is lent to enrollment, served by a distribution point, and a portal on a clock a story moves. */
interface LentList {
  readonly clock: ShiftedClock;
  ca: MdmCa;
  crls: CrlServer;
  portal: TestPortal;
  served: string;
}

/**
 * Within a describe: a plain-http source that names no issuer, no intermediate configured, so the
 * issuing CA is known only once a chain of it enrolls and its list is lent; current for an hour.
 */
function withLentList(caName: string): LentList {
  const lab = { clock: shiftedClock(), served: '' } as LentList;
  before(async () => {
    lab.ca = MdmCa.make(caName);
    lab.served = lab.ca.writeCrl({ nextUpdate: new Date(Date.now() + HOUR_MS) });
    lab.crls = await CrlServer.start(() => lab.served);
    lab.portal = await startTestPortal({
      clock: lab.clock,
      config: { enrollment: lab.ca.mutualTlsEnrollment({ crl: [lab.crls.url], crlRefresh: 'PT1S' }) },
    });
    await untilLent(lab.portal, lab.crls.url);
  });
  after(async () => {
    await lab.portal?.close();
    await lab.crls?.close();
    lab.ca?.remove();
  });
  return lab;
}

/** The distribution point's answers are withheld, the CA revokes `stolen`, and the lent list's nextUpdate passes. */
async function revokeWhileWithheld(lab: LentList, stolen: DeviceCertificateFiles): Promise<void> {
  lab.crls.failing = true;
  lab.served = lab.ca.revoke(stolen.certificate);
  const readsBefore = lab.crls.requests;
  lab.clock.advance(2 * HOUR_MS);
  await until('the portal tried to read a newer list', async () => lab.crls.requests > readsBefore);
}

function registerLaptop(portal: TestPortal, serial: string) {
  return portal.admin.registerDevice({ user_id: 'lena', profile_id: 'employees', platform: 'linux', serial });
}

describe('a list lent to enrollment past its nextUpdate, its distribution point withheld', () => {
  const lab = withLentList('Lent Expiry');

  test('keeps a certificate the CA revoked since from enrolling (503) until a current list of its CA checks it', async () => {
    const { ca, crls, portal } = lab;
    const stolen = ca.device('stolen', { cn: 'stolen', uri: 'urn:mdm:serial:LENT-STOLEN' });
    const kept = ca.device('kept', { cn: 'kept', uri: 'urn:mdm:serial:LENT-KEPT' });
    const device = await registerLaptop(portal, 'LENT-STOLEN');
    await registerLaptop(portal, 'LENT-KEPT');

    await revokeWhileWithheld(lab, stolen);
    assertWaitsForCurrentList(await enroll(portal, ca, stolen), crls.url);
    assert.deepEqual((await portal.admin.device(device.device_id)).configurations, [], 'nothing enrolled');

    // The CA's current list is served again: lent in place of the expired one, it refuses the
    // stolen certificate as revoked, and lets the others enroll.
    crls.failing = false;
    await until('the stolen certificate refused as revoked', async () => {
      const answer = await enroll(portal, ca, stolen);
      return answer.status === 403 && /revoked/.test(answer.text);
    });
    const enrolled = await enroll(portal, ca, kept);
    assert.equal(enrolled.status, 200, enrolled.text);
    assert.deepEqual((await portal.admin.device(device.device_id)).configurations, []);
  });
});

describe('the root’s current list in force from one source, the issuing CA’s lent from another and past its nextUpdate', () => {
  const clock = shiftedClock();
  let ca: MdmCa;
  let rootCrls: CrlServer;
  let crls: CrlServer;
  let portal: TestPortal | undefined;
  let served: string;
  let rootList: string;
  let stolen: DeviceCertificateFiles;

  before(async () => {
    ca = MdmCa.make('Lent Below Root');
    stolen = ca.device('stolen', { cn: 'stolen', uri: 'urn:mdm:serial:BELOW-STOLEN' });
    // The root's list is current for a day, the issuing CA's for an hour.
    rootList = ca.writeRootCrl();
    served = ca.writeCrl({ nextUpdate: new Date(Date.now() + HOUR_MS) });
    rootCrls = await CrlServer.start(() => rootList);
    crls = await CrlServer.start(() => served);
    portal = await startTestPortal({
      clock,
      config: { enrollment: ca.mutualTlsEnrollment({ crl: [rootCrls.url, crls.url], crlRefresh: 'PT1S' }) },
    });
  });

  after(async () => {
    await portal?.close();
    await rootCrls?.close();
    await crls?.close();
    ca?.remove();
  });

  test('the root’s list does not let a certificate the issuing CA revoked since enroll: it waits (503)', async () => {
    assert.ok(portal);
    const running = portal;
    await untilLent(running, crls.url);
    await until('the root’s list in force', async () =>
      (await metricsText(running)).includes(`vpn_portal_crl_age_seconds{file="${rootCrls.url}"}`),
    );
    const device = await running.admin.registerDevice({
      user_id: 'lena',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'BELOW-STOLEN',
    });

    crls.failing = true;
    served = ca.revoke(stolen.certificate);
    const readsBefore = crls.requests;
    clock.advance(2 * HOUR_MS);
    await until('the portal tried to read a newer list', async () => crls.requests > readsBefore);
    assertWaitsForCurrentList(await enroll(running, ca, stolen), crls.url);
    assert.deepEqual((await running.admin.device(device.device_id)).configurations, [], 'nothing enrolled');
  });
});

describe('a stolen certificate presented again and again while the newer list arrives', () => {
  const lab = withLentList('Lent Race');

  test('never enrolls: a check begun on the expired list is not finished on the new one', async () => {
    const { ca, crls, portal } = lab;
    const stolen = ca.device('stolen', { cn: 'stolen', uri: 'urn:mdm:serial:RACE-STOLEN' });
    const device = await registerLaptop(portal, 'RACE-STOLEN');
    await revokeWhileWithheld(lab, stolen);

    // The thief keeps presenting the certificate from many connections at once while the
    // distribution point answers again and the list naming it replaces the expired one.
    crls.failing = false;
    const statuses = new Set<number>();
    const presentUntilRevoked = async (): Promise<void> => {
      for (;;) {
        const answer = await enroll(portal, ca, stolen);
        statuses.add(answer.status);
        if (answer.status === 200 || (answer.status === 403 && /revoked/.test(answer.text))) return;
      }
    };
    await Promise.all(Array.from({ length: 24 }, presentUntilRevoked));
    // Each waits (503) while the expired list is all there is, then is refused as revoked.
    assert.deepEqual(
      [...statuses].filter((status) => status !== 503),
      [403],
      'refused as revoked, never enrolled',
    );
    assert.deepEqual((await portal.admin.device(device.device_id)).configurations, []);
  });
});
