// A device whose certificate appears on a revocation list is retired, with a
// test CA made at run time with openssl and its list served over http as a distribution point
// would: the device bound to the revoked certificate is retired within one crlRefresh, with a
// receipt and an audit row naming its user; a device that replaced a revoked certificate by a
// new one stays; a list that cannot be fetched keeps the last good one, is flagged in the
// metrics and retires nothing. A list is believed only when the CA it names (a trust anchor, or
// an intermediate seen in an enrolled chain) signed it and it is current: a forged, expired or
// early list retires nobody, keeps the last good one, and is in the metrics and the audit log, and
// so does another known CA's genuine list served in place of the list in force; a genuine list
// that would retire too many at once waits for `vpn-portal mdm confirm-crl`. What was believed
// from a source holds across a restart: its list is in force at once, and an older list or
// another CA's served after the restart is refused. Before a distribution point's first list is
// read a certificate waits (503, and the example enroll script tries again); a list of a CA not
// known yet still checks the chains presented.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { auditRecords } from '../../../src/storage/audit-log.js';
import {
  CrlServer,
  assertEnrollmentRefusedAsRevoked,
  MdmCa,
  enrollOnceListsRead,
  enrollOverTls,
  type DeviceCertificateFiles,
  tlsEnrollUrl,
} from '../../support/mdm-ca.js';
import { runCli } from '../../support/portal-process.js';
import {
  defaultTestConfig,
  startTestPortal,
  testPortalConfigFile,
  type TestPortal,
  metricsText,
} from '../../support/test-portal.js';
import { capturedLog } from '../../support/captured-log.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { until, within } from '../../support/until.js';

const REFRESH_MS = 1000;

/** The portal's metrics as Prometheus scrapes them. */
/** The sample `name{labels}` in the metrics `text`; NaN when there is none. */
function metricValue(text: string, name: string, labels: string): number {
  return Number(
    new RegExp(`^${name}\\{${labels.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\} (\\S+)$`, 'm').exec(text)?.[1],
  );
}

/** How many lists the portal has refused for `reason` (`unknown-issuer`, `bad-signature`, …). */
async function refusedLists(portal: TestPortal, reason: string): Promise<number> {
  return metricValue(await metricsText(portal), 'vpn_portal_crl_refused_total', `reason="${reason}"`) || 0;
}

/** Whether the portal has the list read from `crlUrl` in force, with one certificate on it. */
async function listInForceWithOneEntry(portal: TestPortal, crlUrl: string): Promise<boolean> {
  return (await metricsText(portal)).includes(`vpn_portal_crl_entries{file="${crlUrl}"} 1`);
}

/** Registers `user`'s Linux device by its MDM serial, as the MDM does before the device enrolls. */
function registerLinuxDevice(portal: TestPortal, user: string, serial: string): Promise<DeviceInfo> {
  return portal.admin.registerDevice({ user_id: user, profile_id: 'employees', platform: 'linux', serial });
}

/**
 * Issues the device of `serial` a certificate of `ca` (its files named `file`) and enrolls with it
 * once the lists are read; the certificate.
 */
async function enrollNewCertificate(
  portal: TestPortal,
  ca: MdmCa,
  file: string,
  serial: string,
): Promise<DeviceCertificateFiles> {
  const certificate = ca.device(file, { cn: file, uri: `urn:mdm:serial:${serial}` });
  const answer = await enrollOnceListsRead(tlsEnrollUrl(portal), ca, certificate, {
    public_key: generateWireGuardKeyPair().publicKey,
  });
  assert.equal(answer.status, 200, answer.text);
  return certificate;
}

/** How a describe's distribution point and portal start (see portalReadingList). */
interface ListSetup {
  /** The list file the distribution point serves, asked at each read. */
  readonly list: () => string;
  /** The portal's `enrollment`, its revocation list read from `crlUrl`. */
  readonly enrollment: (crlUrl: string) => Record<string, unknown>;
  /** What the distribution point is made to do before the portal's first read. */
  readonly beforePortalStarts?: (crls: CrlServer) => void;
}

/** A portal and the distribution point it reads its revocation list from. */
interface PortalReadingList {
  readonly portal: TestPortal;
  readonly crls: CrlServer;
}

/**
 * Before the describe's tests: `setup` makes its CAs with `makeCa`, a distribution point serves
 * its list and a portal enrolling over mutual TLS reads it. After them: both are closed and the
 * CAs removed. (The describes whose portal or distribution point starts otherwise start their
 * own: a data folder, a restart, a held first read, two points.)
 */
function portalReadingList(setup: (makeCa: (name?: string) => MdmCa) => ListSetup): PortalReadingList {
  const cas: MdmCa[] = [];
  let portal: TestPortal | undefined;
  let crls: CrlServer | undefined;

  before(async () => {
    const { list, enrollment, beforePortalStarts } = setup((name) => {
      const ca = MdmCa.make(name);
      cas.push(ca);
      return ca;
    });
    crls = await CrlServer.start(list);
    beforePortalStarts?.(crls);
    portal = await startTestPortal({ config: { enrollment: enrollment(crls.url) } });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    for (const ca of cas) ca.remove();
  });

  return {
    get portal() {
      assert.ok(portal, 'the portal is started before the tests');
      return portal;
    },
    get crls() {
      assert.ok(crls, 'the distribution point is started before the tests');
      return crls;
    },
  };
}

const ENROLL_SCRIPT = new URL('../../../examples/enroll-wireguard.sh', import.meta.url).pathname;
const run = promisify(execFile);

describe('a device whose certificate is revoked is retired', () => {
  let ca: MdmCa;
  const started = portalReadingList((makeCa) => {
    ca = makeCa();
    const crlFile = ca.writeCrl();
    return {
      list: () => crlFile,
      enrollment: (crlUrl) => ca.mutualTlsEnrollment({ crl: [crlUrl], crlRefresh: 'PT1S' }),
    };
  });

  async function enrolled(
    user: string,
    serial: string,
    file: string,
  ): Promise<{ deviceId: string; certificate: DeviceCertificateFiles }> {
    const device = await registerLinuxDevice(started.portal, user, serial);
    const certificate = await enrollNewCertificate(started.portal, ca, file, serial);
    return { deviceId: device.device_id, certificate };
  }

  const metrics = () => metricsText(started.portal);
  /** Waits until the portal has read the list twice more: one whole refresh ran after the call. */
  const twoMoreReads = async () => {
    const { crls } = started;
    const target = crls.requests + 2;
    await until('two more reads of the list', async () => crls.requests >= target, 30_000);
  };
  const sample = (text: string, name: string) => metricValue(text, name, `file="${started.crls.url}"`);

  test('the device bound to the revoked certificate is retired within one refresh, with a receipt and an audit row naming its user', async () => {
    const { portal, crls } = started;
    const { deviceId, certificate } = await enrolled('alice', 'CRL-1', 'alice-laptop');
    const bystander = await enrolled('bob', 'CRL-2', 'bob-laptop');
    ca.revoke(certificate.certificate);
    // Every read from here on gets the list that revokes it. "Within one refresh" is counted in
    // reads, not in seconds (a loaded machine stretches those): the next read after the first
    // one is held until the test has seen the device retired by then.
    const first = crls.requests;
    let release = () => {};
    const secondRead = new Promise<void>((arrived) => {
      crls.gate = async (ordinal) => {
        if (ordinal !== first + 1) return;
        arrived();
        await new Promise<void>((resolve) => (release = resolve));
      };
    });
    try {
      await within(secondRead, 'a second read of the list after the revocation', 60_000);
      assert.equal(
        (await portal.admin.device(deviceId)).state,
        'retired',
        'retired by the first read of the list that revokes it',
      );
    } finally {
      crls.gate = null;
      release();
    }
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
    const { portal } = started;
    const { deviceId, certificate } = await enrolled('carol', 'CRL-3', 'carol-old');
    const renewed = ca.device('carol-new', { cn: 'carol-new', uri: 'urn:mdm:serial:CRL-3' });
    const again = await enrollOverTls(tlsEnrollUrl(portal), ca, renewed, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(again.status, 200, again.text);
    ca.revoke(certificate.certificate);
    await until(
      'the list with the old certificate read',
      async () => sample(await metrics(), 'vpn_portal_crl_entries') === 2,
      30_000,
    );
    await twoMoreReads();
    assert.equal((await portal.admin.device(deviceId)).state, 'active');
  });

  test('a list that cannot be fetched keeps the last good one, is flagged in the metrics, and retires nothing', async () => {
    const { portal, crls } = started;
    const { deviceId } = await enrolled('dave', 'CRL-4', 'dave-laptop');
    const before = await portal.admin.devices();
    crls.failing = true;
    await until(
      'the failure flagged',
      async () => sample(await metrics(), 'vpn_portal_crl_read_failing') === 1,
      30_000,
    );
    await twoMoreReads();
    assert.equal(sample(await metrics(), 'vpn_portal_crl_entries'), 2, 'the last good list stays in use');
    assert.deepEqual(await portal.admin.devices(), before);
    assert.equal((await portal.admin.device(deviceId)).state, 'active');
    crls.failing = false;
    await until('read again', async () => sample(await metrics(), 'vpn_portal_crl_read_failing') === 0, 30_000);
  });
});

describe('a revocation list is believed only when the CA it names signed it and it is current', () => {
  let ca: MdmCa;
  let forger: MdmCa;
  let crls: CrlServer;
  let portal: TestPortal;
  let served: string;
  let dataDir: string;
  let configFile: string;
  const HOUR_MS = 3_600_000;

  before(async () => {
    ca = MdmCa.make('Trusted MDM');
    // Same names as `ca` (root and issuing CA), keys of its own: what someone on the path to an
    // http distribution point can make.
    forger = MdmCa.make('Trusted MDM');
    served = ca.writeCrl();
    crls = await CrlServer.start(() => served);
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-crl-'));
    portal = await startTestPortal({
      dataDir,
      config: { enrollment: ca.mutualTlsEnrollment({ crl: [crls.url], crlRefresh: 'PT1S' }) },
    });
    configFile = path.join(dataDir, 'portal.json');
    writeFileSync(
      configFile,
      JSON.stringify({ ...defaultTestConfig, dataDir, database: portal.database, enrollment: {} }),
    );
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    ca?.remove();
    forger?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const metrics = () => metricsText(portal);
  const ofList = (text: string, name: string) => metricValue(text, name, `file="${crls.url}"`);
  const refused = (reason: string) => refusedLists(portal, reason);

  async function enrolled(user: string, serial: string): Promise<{ deviceId: string; certificate: string }> {
    const device = await registerLinuxDevice(portal, user, serial);
    const certificate = await enrollNewCertificate(portal, ca, `${user}-laptop`, serial);
    return { deviceId: device.device_id, certificate: certificate.certificate };
  }

  /** Serves `file` until the portal refused it for `reason`, then two more refreshes. */
  async function serveRefused(file: string, reason: string): Promise<void> {
    const before = await refused(reason);
    served = file;
    await until(`the list refused (${reason})`, async () => (await refused(reason)) > before, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 2 * REFRESH_MS));
  }

  const refusals = async (reason: string) =>
    (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter(
      (row) => row.call === 'crl_refused' && row.parameters['reason'] === reason,
    );

  test("a list with the intermediate's exact name signed by another key retires nobody; the last good list stays in force", async () => {
    await until(
      'the list refused while no chain of its CA was seen',
      async () => (await refused('unknown-issuer')) >= 1,
      30_000,
    );
    assert.equal((await refusals('unknown-issuer')).length, 1);
    const { deviceId, certificate } = await enrolled('amy', 'TRUST-1');
    await until(
      'the genuine list read',
      async () => ofList(await metrics(), 'vpn_portal_crl_read_failing') === 0,
      30_000,
    );
    const device = await portal.admin.device(deviceId);
    const age = ofList(await metrics(), 'vpn_portal_crl_age_seconds');

    await serveRefused(forger.revoke(certificate), 'bad-signature');
    assert.deepEqual(await portal.admin.device(deviceId), device, 'the device and its configuration are untouched');
    const text = await metrics();
    assert.equal(ofList(text, 'vpn_portal_crl_entries'), 0, 'the last good list stays in force');
    assert.ok(ofList(text, 'vpn_portal_crl_age_seconds') >= age, 'and its thisUpdate with it');
    assert.equal(ofList(text, 'vpn_portal_crl_read_failing'), 1);
    const rows = await refusals('bad-signature');
    assert.equal(rows.length, 1, 'one audit row, not one a refresh');
    assert.equal(rows[0]?.keyName, '(portal)');
    assert.equal(rows[0]?.parameters['crl'], crls.url);
    assert.equal(rows[0]?.parameters['issuer'], 'CN=Trusted MDM Issuing CA');
    assert.equal(
      (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter((row) => row.call === 'retire_device').length,
      0,
    );
  });

  test('a list past its nextUpdate is refused', async () => {
    const { deviceId, certificate } = await enrolled('ben', 'TRUST-2');
    const now = Date.now();
    const expired = ca.revoke(certificate, {
      thisUpdate: new Date(now - 48 * HOUR_MS),
      nextUpdate: new Date(now - 24 * HOUR_MS),
      file: 'expired.crl',
    });
    await serveRefused(expired, 'expired');
    assert.equal((await portal.admin.device(deviceId)).state, 'active');
    assert.equal((await refusals('expired')).length, 1);
  });

  test('a list whose thisUpdate is in the future is refused', async () => {
    const { deviceId, certificate } = await enrolled('cleo', 'TRUST-3');
    const now = Date.now();
    const early = ca.revoke(certificate, {
      thisUpdate: new Date(now + HOUR_MS),
      nextUpdate: new Date(now + 48 * HOUR_MS),
      file: 'early.crl',
    });
    await serveRefused(early, 'not-yet-valid');
    assert.equal((await portal.admin.device(deviceId)).state, 'active');
    assert.equal((await refusals('not-yet-valid')).length, 1);
  });

  test('a genuine list that would retire more than crlMaxRetire of the devices waits for confirmation, then retires', async () => {
    // Four live devices: the default 5% allows one at once; this list revokes two (ben's and cleo's).
    const live = (await portal.admin.devices()).devices.filter((device) => device.state === 'active');
    assert.equal(live.length, 3);
    await enrolled('dora', 'TRUST-4');
    served = ca.writeCrl({ file: 'both.crl' });
    await until('the list held', async () => ofList(await metrics(), 'vpn_portal_crl_held') === 1, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 2 * REFRESH_MS));
    const states = async () =>
      Object.fromEntries((await portal.admin.devices()).devices.map((device) => [device.serial, device.state]));
    assert.deepEqual(await states(), {
      'TRUST-1': 'active',
      'TRUST-2': 'active',
      'TRUST-3': 'active',
      'TRUST-4': 'active',
    });
    const held = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter((row) => row.call === 'crl_held');
    assert.equal(held.length, 1);
    assert.equal(held[0]?.parameters['devices'], '2');
    const sha256 = held[0]?.parameters['sha256'] ?? '';
    assert.match(sha256, /^[0-9a-f]{64}$/);

    const listed = await runCli(['mdm', 'confirm-crl', '--config', configFile]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${sha256} +CN=Trusted MDM Issuing CA +2 `, 'm'));
    const confirmed = await runCli(['mdm', 'confirm-crl', sha256, '--config', configFile]);
    assert.equal(confirmed.code, 0, confirmed.stderr);
    await until('both retired', async () => (await states())['TRUST-3'] === 'retired', 30_000);
    assert.deepEqual(await states(), {
      'TRUST-1': 'active',
      'TRUST-2': 'retired',
      'TRUST-3': 'retired',
      'TRUST-4': 'active',
    });
    assert.equal(ofList(await metrics(), 'vpn_portal_crl_held'), 0);
  });
});

describe('a configured intermediate CA verifies its lists before any device enrolled', () => {
  const started = portalReadingList((makeCa) => {
    const ca = makeCa('Configured MDM');
    const revoked = ca.device('never-enrolled', { cn: 'never-enrolled', uri: 'urn:mdm:serial:NONE' });
    const crlFile = ca.revoke(revoked.certificate);
    return {
      list: () => crlFile,
      enrollment: (crlUrl) =>
        ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crlUrl], crlRefresh: 'PT1S' }),
    };
  });

  test('the issuing CA’s list is believed at the first refresh', async () => {
    const { portal, crls } = started;
    const metrics = () => metricsText(portal);
    const end = Date.now() + 30_000;
    let text = await metrics();
    while (!text.includes(`vpn_portal_crl_entries{file="${crls.url}"} 1`)) {
      if (Date.now() > end) assert.fail(`the list not believed:\n${text}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      text = await metrics();
    }
    assert.match(text, /^vpn_portal_crl_refused_total\{reason="unknown-issuer"\} 0$/m);
    assert.ok(text.includes(`vpn_portal_crl_read_failing{file="${crls.url}"} 0`));
  });
});

describe('a certificate waits while the first list of its distribution point is awaited', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let portal: TestPortal;
  let certificate: DeviceCertificateFiles;
  let releaseFirstRead: () => void = () => undefined;

  before(async () => {
    ca = MdmCa.make('Awaited MDM');
    certificate = ca.device('frank-laptop', { cn: 'frank-laptop', uri: 'urn:mdm:serial:WAIT-1' });
    const crlFile = ca.revoke(certificate.certificate);
    crls = await CrlServer.start(() => crlFile);
    // The distribution point holds its first answer until the test lets it go.
    const firstRead = new Promise<void>((resolve) => {
      releaseFirstRead = resolve;
    });
    crls.gate = (ordinal) => (ordinal === 0 ? firstRead : Promise.resolve());
    portal = await startTestPortal({
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crls.url], crlRefresh: 'PT1S' }),
      },
    });
  });

  after(async () => {
    releaseFirstRead();
    await portal?.close();
    await crls?.close();
    ca?.remove();
  });

  test('a revoked certificate presented before the list was read gets 503 and enrolls nothing; the enroll script waits; once read, the revoked one is refused and the other enrolled', async () => {
    const device = await registerLinuxDevice(portal, 'frank', 'WAIT-1');
    const other = await registerLinuxDevice(portal, 'ivan', 'WAIT-2');
    const enrollUrl = tlsEnrollUrl(portal);
    const enroll = () =>
      enrollOverTls(enrollUrl, ca, certificate, { public_key: generateWireGuardKeyPair().publicKey });
    await until('the portal asked for the list', async () => crls.requests > 0);

    const waiting = await enroll();
    assert.equal(waiting.status, 503, waiting.text);
    assert.equal(waiting.headers['retry-after'], '5');
    assert.ok(waiting.text.includes(`the revocation list ${crls.url} has not been read yet`), waiting.text);
    const held = await portal.admin.device(device.device_id);
    assert.equal(held.state, 'registered');
    assert.deepEqual(held.configurations, []);
    const refusals = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter(
      (row) => row.call === 'enroll' && row.status === 503,
    );
    assert.equal(refusals.length, 1);
    assert.equal(refusals[0]?.parameters['device_id'], 'WAIT-1');

    // The example enroll script, run by the MDM for another device meanwhile, is told to wait too.
    const good = ca.device('ivan-laptop', { cn: 'ivan-laptop', uri: 'urn:mdm:serial:WAIT-2' });
    const chain = path.join(ca.directory, 'ivan-chain.pem');
    writeFileSync(chain, `${good.certificatePem}${ca.issuingPem}`);
    const serverCa = path.join(ca.directory, 'server-ca.pem');
    writeFileSync(serverCa, `${ca.rootPem}${ca.issuingPem}`);
    const script = run('sh', [ENROLL_SCRIPT, enrollUrl, path.join(ca.directory, 'wg-ivan.conf')], {
      env: {
        ...process.env,
        VPN_ENROLL_CERT: chain,
        VPN_ENROLL_KEY: good.key,
        VPN_ENROLL_CA: serverCa,
        VPN_ENROLL_NO_UP: '1',
      },
    });
    // Its 503 is the second in the audit log (counted into the first one's row within a minute).
    const waits = async () =>
      (await auditRecords(portal.portal.ctx.db, { limit: 100 }))
        .filter((row) => row.call === 'enroll' && row.status === 503)
        .reduce((sum, row) => sum + 1 + row.repeated, 0);
    await until('the script told to wait', async () => (await waits()) >= 2);

    releaseFirstRead();
    const { stdout } = await within(script, 'the enroll script', 30_000);
    assert.match(stdout, /enrolled; configuration written to /);
    assert.equal((await portal.admin.device(other.device_id)).configurations.length, 1);
    await assertEnrollmentRefusedAsRevoked(enrollUrl, ca, certificate);
    assert.equal((await portal.admin.device(device.device_id)).state, 'registered');
  });
});

describe('before its CA is known, a list still checks the chains presented at enrollment', () => {
  let ca: MdmCa;
  let revoked: DeviceCertificateFiles;
  const started = portalReadingList((makeCa) => {
    // No intermediates configured and no device enrolled yet: the issuing CA is not known.
    ca = makeCa('Unknown MDM');
    revoked = ca.device('grace-laptop', { cn: 'grace-laptop', uri: 'urn:mdm:serial:FIRST-1' });
    const crlFile = ca.revoke(revoked.certificate);
    return {
      list: () => crlFile,
      enrollment: (crlUrl) => ca.mutualTlsEnrollment({ crl: [crlUrl], crlRefresh: 'PT1S' }),
    };
  });

  test('the first certificate presented, revoked on that list, is refused; another of the CA enrolls and makes the CA known', async () => {
    const { portal, crls } = started;
    const enrollUrl = tlsEnrollUrl(portal);
    await registerLinuxDevice(portal, 'grace', 'FIRST-1');
    await registerLinuxDevice(portal, 'heidi', 'FIRST-2');
    await until(
      'the list refused as of an unknown CA',
      async () => (await refusedLists(portal, 'unknown-issuer')) >= 1,
      30_000,
    );

    await assertEnrollmentRefusedAsRevoked(enrollUrl, ca, revoked, 'now');

    const good = ca.device('heidi-laptop', { cn: 'heidi-laptop', uri: 'urn:mdm:serial:FIRST-2' });
    const enrolled = await enrollOverTls(enrollUrl, ca, good, { public_key: generateWireGuardKeyPair().publicKey });
    assert.equal(enrolled.status, 200, enrolled.text);
    await until('the list believed', () => listInForceWithOneEntry(portal, crls.url), 30_000);
  });
});

describe('a list of a made-up CA served at a first start does not end the wait', () => {
  let ca: MdmCa;
  let served: string;
  let revoked: DeviceCertificateFiles;
  const started = portalReadingList((makeCa) => {
    ca = makeCa('Genuine MDM');
    // Whoever answers for the plain-http distribution point serves a list of a CA of its own.
    const madeUp = makeCa('Made-up MDM');
    served = madeUp.writeCrl();
    revoked = ca.device('ivan-laptop', { cn: 'ivan-laptop', uri: 'urn:mdm:serial:MADE-1' });
    return {
      list: () => served,
      enrollment: (crlUrl) =>
        ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crlUrl], crlRefresh: 'PT1S' }),
    };
  });

  test('a certificate of the genuine CA waits (503) while the made-up list is lent, and is refused as revoked once the genuine list is served', async () => {
    const { portal } = started;
    const device = await registerLinuxDevice(portal, 'ivan', 'MADE-1');
    const enrollUrl = tlsEnrollUrl(portal);
    await until(
      'the made-up list refused as of an unknown CA',
      async () => (await refusedLists(portal, 'unknown-issuer')) >= 1,
      30_000,
    );
    const waiting = await enrollOverTls(enrollUrl, ca, revoked, { public_key: generateWireGuardKeyPair().publicKey });
    assert.equal(waiting.status, 503, waiting.text);
    assert.deepEqual((await portal.admin.device(device.device_id)).configurations, []);

    served = ca.revoke(revoked.certificate);
    await assertEnrollmentRefusedAsRevoked(enrollUrl, ca, revoked);
  });
});

describe('two distribution points of CAs not known yet', () => {
  let alpha: MdmCa;
  let beta: MdmCa;
  let alphaLists: CrlServer;
  let betaLists: CrlServer;
  let portal: TestPortal;

  before(async () => {
    // Two MDMs, no intermediates configured, no device enrolled: both lists are lent.
    alpha = MdmCa.make('Alpha Unknown MDM');
    beta = MdmCa.make('Beta Unknown MDM');
    const alphaList = alpha.writeCrl();
    const betaList = beta.writeCrl();
    alphaLists = await CrlServer.start(() => alphaList);
    betaLists = await CrlServer.start(() => betaList);
    portal = await startTestPortal({
      config: {
        enrollment: alpha.mutualTlsEnrollment({
          trustAnchors: [alpha.rootFile, beta.rootFile],
          crl: [alphaLists.url, betaLists.url],
          crlRefresh: 'PT1S',
        }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    await alphaLists?.close();
    await betaLists?.close();
    alpha?.remove();
    beta?.remove();
  });

  test('a certificate of each enrolls, checked by its own CA’s list, without waiting for the other’s', async () => {
    for (const [ca, serial] of [
      [alpha, 'TWO-1'],
      [beta, 'TWO-2'],
    ] as const) {
      await registerLinuxDevice(portal, serial, serial);
      const certificate = ca.device(serial, { cn: serial, uri: `urn:mdm:serial:${serial}` });
      // The portal's own TLS certificate is Alpha's; the device's chain is its CA's.
      const enrolled = await enrollOnceListsRead(
        tlsEnrollUrl(portal),
        alpha,
        certificate,
        { public_key: generateWireGuardKeyPair().publicKey },
        ca,
      );
      assert.equal(enrolled.status, 200, enrolled.text);
    }
  });
});

describe('a distribution point whose first reading fails is read again within seconds', () => {
  let ca: MdmCa;
  let revoked: DeviceCertificateFiles;
  const started = portalReadingList((makeCa) => {
    ca = makeCa('Slow MDM');
    revoked = ca.device('judy-laptop', { cn: 'judy-laptop', uri: 'urn:mdm:serial:SOON-1' });
    const crlFile = ca.revoke(revoked.certificate);
    return {
      list: () => crlFile,
      beforePortalStarts: (crls) => {
        crls.failing = true;
      },
      enrollment: (crlUrl) =>
        ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crlUrl], crlRefresh: 'PT1H' }),
    };
  });

  test('though crlRefresh is an hour: enrollment waits while it fails, and checks the certificate once it answers', async () => {
    const { portal, crls } = started;
    await registerLinuxDevice(portal, 'judy', 'SOON-1');
    const enrollUrl = tlsEnrollUrl(portal);
    await until('the first reading failed', async () => crls.requests > 0);
    const waiting = await enrollOverTls(enrollUrl, ca, revoked, { public_key: generateWireGuardKeyPair().publicKey });
    assert.equal(waiting.status, 503, waiting.text);

    crls.failing = false;
    await assertEnrollmentRefusedAsRevoked(enrollUrl, ca, revoked);
  });
});

describe('a list in force past its nextUpdate', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let served: string;
  let portal: TestPortal;
  const clock = shiftedClock();
  const HOUR = 3_600_000;

  before(async () => {
    ca = MdmCa.make('Expiring MDM');
    served = ca.writeCrl({ nextUpdate: new Date(Date.now() + HOUR) });
    crls = await CrlServer.start(() => served);
    portal = await startTestPortal({
      clock,
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crls.url], crlRefresh: 'PT2S' }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    ca?.remove();
  });

  test('keeps enrollment of its CA waiting (503) while no newer list can be read: a revocation published since may be missing from it', async () => {
    await registerLinuxDevice(portal, 'olga', 'EXPIRING-1');
    await enrollNewCertificate(portal, ca, 'olga-laptop', 'EXPIRING-1');

    // The distribution point goes down (or its answers are withheld on the way) past the list's nextUpdate.
    crls.failing = true;
    const readsBefore = crls.requests;
    clock.advance(2 * HOUR);
    await until('the portal tried to read a newer list', async () => crls.requests > readsBefore);
    const other = await registerLinuxDevice(portal, 'pavel', 'EXPIRING-2');
    const certificate = ca.device('pavel-laptop', { cn: 'pavel-laptop', uri: 'urn:mdm:serial:EXPIRING-2' });
    const enroll = () =>
      enrollOverTls(tlsEnrollUrl(portal), ca, certificate, { public_key: generateWireGuardKeyPair().publicKey });
    const waiting = await enroll();
    assert.equal(waiting.status, 503, waiting.text);
    assert.equal(waiting.headers['retry-after'], '60');
    assert.ok(waiting.text.includes(`the revocation list ${crls.url} (nextUpdate `), waiting.text);
    assert.ok(waiting.text.includes('has expired and no newer one could be read yet'), waiting.text);
    assert.deepEqual((await portal.admin.device(other.device_id)).configurations, [], 'nothing enrolled');

    // The CA's next list is served again: enrollment goes on.
    served = ca.writeCrl({
      thisUpdate: new Date(clock.now().getTime() - 60_000),
      nextUpdate: new Date(clock.now().getTime() + HOUR),
    });
    crls.failing = false;
    await until('the device enrolls once a current list is read', async () => (await enroll()).status === 200, 30_000);
    assert.equal((await portal.admin.device(other.device_id)).configurations.length, 1);
  });
});

describe('a distribution point that fails while its list is in force is read again within seconds', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let served: string;
  let dataDir: string;
  const portals: TestPortal[] = [];

  before(async () => {
    ca = MdmCa.make('Flaky MDM');
    served = ca.writeCrl();
    crls = await CrlServer.start(() => served);
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-crl-flaky-'));
  });

  after(async () => {
    for (const portal of portals) await portal.close();
    await crls?.close();
    ca?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (): Promise<TestPortal> => {
    const portal = await startTestPortal({
      dataDir,
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [ca.issuingFile], crl: [crls.url], crlRefresh: 'PT1H' }),
      },
    });
    portals.push(portal);
    return portal;
  };

  test('though crlRefresh is an hour: the revocation published after the failure retires the device within seconds', async () => {
    const first = await start();
    const device = await registerLinuxDevice(first, 'nina', 'FLAKY-1');
    const certificate = await enrollNewCertificate(first, ca, 'nina-laptop', 'FLAKY-1');
    await first.close();

    // The list believed before the restart is in force; the distribution point is down at start.
    crls.failing = true;
    const readsBefore = crls.requests;
    const second = await start();
    await until('the reading at start failed', async () => crls.requests > readsBefore);
    served = ca.revoke(certificate.certificate);
    crls.failing = false;
    await until(
      'the device retired by the list published meanwhile',
      async () => (await second.admin.device(device.device_id)).state === 'retired',
      60_000,
    );
  });
});

describe('a CA renewed under its name with a new key', () => {
  let renewed: MdmCa;
  let revoked: DeviceCertificateFiles;
  const started = portalReadingList((makeCa) => {
    // The old CA is configured; the renewed one has its very names and keys of its own.
    const previous = makeCa('Renewed MDM');
    renewed = makeCa('Renewed MDM');
    revoked = renewed.device('kim-laptop', { cn: 'kim-laptop', uri: 'urn:mdm:serial:RENEW-1' });
    const crlFile = renewed.revoke(revoked.certificate);
    return {
      list: () => crlFile,
      enrollment: (crlUrl) =>
        renewed.mutualTlsEnrollment({
          trustAnchors: [previous.rootFile, renewed.rootFile],
          intermediates: [previous.issuingFile],
          crl: [crlUrl],
          crlRefresh: 'PT1S',
        }),
    };
  });

  test('its list, signed by a key the portal does not know yet for that name, still checks its chains: the revoked certificate is refused, another enrolls and makes the CA known', async () => {
    const { portal, crls } = started;
    await registerLinuxDevice(portal, 'kim', 'RENEW-1');
    await registerLinuxDevice(portal, 'lee', 'RENEW-2');
    const enrollUrl = tlsEnrollUrl(portal);
    await until(
      'the list refused as signed by another key',
      async () => (await refusedLists(portal, 'bad-signature')) >= 1,
      30_000,
    );
    await assertEnrollmentRefusedAsRevoked(enrollUrl, renewed, revoked, 'now');

    const good = renewed.device('lee-laptop', { cn: 'lee-laptop', uri: 'urn:mdm:serial:RENEW-2' });
    const enrolled = await enrollOverTls(enrollUrl, renewed, good, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(enrolled.status, 200, enrolled.text);
    await until('the list believed', () => listInForceWithOneEntry(portal, crls.url), 30_000);
  });
});

describe('a revocation list keeps to the CA of the list in force', () => {
  let alpha: MdmCa;
  let beta: MdmCa;
  let served: string;
  let revoked: DeviceCertificateFiles;
  const started = portalReadingList((makeCa) => {
    alpha = makeCa('Alpha MDM');
    beta = makeCa('Beta MDM');
    revoked = alpha.device('eve-laptop', { cn: 'eve-laptop', uri: 'urn:mdm:serial:SWAP-1' });
    served = alpha.revoke(revoked.certificate);
    return {
      list: () => served,
      enrollment: (crlUrl) =>
        alpha.mutualTlsEnrollment({
          trustAnchors: [alpha.rootFile, beta.rootFile],
          intermediates: [alpha.issuingFile, beta.issuingFile],
          crl: [crlUrl],
          crlRefresh: 'PT1S',
        }),
    };
  });

  test("another known CA's current list served in its place is refused: a certificate the first CA revoked stays refused", async () => {
    const { portal, crls } = started;
    await registerLinuxDevice(portal, 'eve', 'SWAP-1');
    await until("Alpha's list read", () => listInForceWithOneEntry(portal, crls.url), 30_000);
    const enroll = () =>
      enrollOverTls(tlsEnrollUrl(portal), alpha, revoked, { public_key: generateWireGuardKeyPair().publicKey });
    const refusedBefore = await enroll();
    assert.equal(refusedBefore.status, 403, refusedBefore.text);
    assert.match(refusedBefore.text, /revoked/);

    // Someone on the path to Alpha's distribution point answers with Beta's genuine, current list.
    served = beta.writeCrl();
    await new Promise((resolve) => setTimeout(resolve, 3 * REFRESH_MS));
    const again = await enroll();
    assert.equal(again.status, 403, again.text);
    assert.match(again.text, /revoked/);
    const text = await metricsText(portal);
    assert.ok(text.includes(`vpn_portal_crl_entries{file="${crls.url}"} 1`), "Alpha's list stays in force");
    assert.match(text, /^vpn_portal_crl_refused_total\{reason="other-issuer"\} [1-9]/m);
    const rows = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter(
      (row) => row.call === 'crl_refused' && row.parameters['reason'] === 'other-issuer',
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.parameters['issuer'], 'CN=Beta MDM Issuing CA');
  });
});

// Whoever answers for the plain-http address at the first start serves a genuine list of another
// CA the portal knows: of another name, or of the very same names under other keys (as a CA
// renewed under its name is).
for (const { other, otherName, refusal, device, serial, title } of [
  {
    other: 'Beta',
    otherName: 'Beta MDM',
    refusal: 'other-issuer',
    device: 'olga',
    serial: 'NAMED-1',
    title:
      "a source whose entry names its CA is held to it from its first reading: another known CA's genuine list is refused, lent to nobody, and the named CA's own list is believed once served",
  },
  {
    other: 'the namesake',
    otherName: 'Alpha MDM',
    refusal: 'bad-signature',
    device: 'paul',
    serial: 'NAMED-2',
    title:
      'a source whose entry names its CA believes only that CA’s key: the genuine list of a namesake CA is refused as not signed by it, and a certificate of the named CA waits for its own',
  },
] as const) {
  describe(title, () => {
    let alpha: MdmCa;
    let served: string;
    let revoked: DeviceCertificateFiles;
    const started = portalReadingList((makeCa) => {
      alpha = makeCa('Alpha MDM');
      const otherCa = makeCa(otherName);
      revoked = alpha.device(`${device}-laptop`, { cn: `${device}-laptop`, uri: `urn:mdm:serial:${serial}` });
      served = otherCa.writeCrl();
      return {
        list: () => served,
        enrollment: (crlUrl) =>
          alpha.mutualTlsEnrollment({
            trustAnchors: [alpha.rootFile, otherCa.rootFile],
            intermediates: [otherCa.issuingFile],
            crl: [{ list: crlUrl, issuer: alpha.issuingFile }],
            crlRefresh: 'PT1S',
          }),
      };
    });

    test(`${other}'s list is refused (${refusal}); the revoked certificate waits, then is refused as revoked once Alpha's list is served`, async () => {
      const { portal, crls } = started;
      await registerLinuxDevice(portal, device, serial);
      const enrollUrl = tlsEnrollUrl(portal);
      await until(`${other}'s list refused`, async () => (await refusedLists(portal, refusal)) >= 1, 30_000);
      const waiting = await enrollOverTls(enrollUrl, alpha, revoked, {
        public_key: generateWireGuardKeyPair().publicKey,
      });
      assert.equal(waiting.status, 503, waiting.text);
      assert.match(waiting.text, /has not been read yet/);

      served = alpha.revoke(revoked.certificate);
      await assertEnrollmentRefusedAsRevoked(enrollUrl, alpha, revoked);
      const text = await metricsText(portal);
      assert.ok(text.includes(`vpn_portal_crl_entries{file="${crls.url}"} 1`), "Alpha's list is in force");
      const [pin] = await portal.portal.ctx.db.selectFrom('revocation_list_sources').select('issuer').execute();
      assert.equal(pin?.issuer, 'CN=Alpha MDM Issuing CA');
    });
  });
}

test('a crl entry whose issuer file holds no certificate, or two, stops the portal at start, naming the entry', async (t) => {
  const ca = MdmCa.make('Named MDM');
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-crl-issuer-'));
  t.after(() => {
    ca.remove();
    rmSync(directory, { recursive: true, force: true });
  });
  const notPem = path.join(directory, 'not-pem.pem');
  writeFileSync(notPem, 'not a certificate');
  const two = path.join(directory, 'two.pem');
  writeFileSync(two, `${ca.rootPem}${ca.issuingPem}`);

  for (const [issuer, expected] of [
    [notPem, /enrollment\.clientCertificate\.crl\[0\]\.issuer: not a PEM certificate/],
    [two, /enrollment\.clientCertificate\.crl\[0\]\.issuer: the file must hold one certificate/],
  ] as const) {
    await assert.rejects(
      startTestPortal({
        config: {
          enrollment: ca.mutualTlsEnrollment({ crl: [{ list: 'http://127.0.0.1:9/ca.crl', issuer }] }),
        },
      }),
      expected,
    );
  }
});

describe('what was believed from a revocation list source holds across a restart', () => {
  let alpha: MdmCa;
  let beta: MdmCa;
  let crls: CrlServer;
  let served: string;
  let dataDir: string;
  let revoked: DeviceCertificateFiles;
  let olderList: string;
  const portals: TestPortal[] = [];

  before(async () => {
    alpha = MdmCa.make('Alpha MDM');
    beta = MdmCa.make('Beta MDM');
    // A genuine list of an hour ago, still current: from before the revocation below.
    olderList = alpha.writeCrl({ file: 'before.crl', thisUpdate: new Date(Date.now() - 3_600_000) });
    revoked = alpha.device('eve-laptop', { cn: 'eve-laptop', uri: 'urn:mdm:serial:KEPT-1' });
    served = alpha.revoke(revoked.certificate);
    crls = await CrlServer.start(() => served);
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-crl-kept-'));
  });

  after(async () => {
    for (const portal of portals) await portal.close();
    await crls?.close();
    alpha?.remove();
    beta?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** `namingAlpha`: the entry names Alpha's issuing CA as the source's. */
  const config = (namingAlpha = false) => ({
    enrollment: alpha.mutualTlsEnrollment({
      trustAnchors: [alpha.rootFile, beta.rootFile],
      intermediates: [alpha.issuingFile, beta.issuingFile],
      crl: [namingAlpha ? { list: crls.url, issuer: alpha.issuingFile } : crls.url],
      crlRefresh: 'PT1S',
    }),
  });
  const start = async (namingAlpha = false): Promise<TestPortal> => {
    // The same data folder: the same database each time.
    const portal = await startTestPortal({ dataDir, config: config(namingAlpha) });
    portals.push(portal);
    return portal;
  };
  const enroll = (portal: TestPortal) =>
    enrollOverTls(tlsEnrollUrl(portal), alpha, revoked, {
      public_key: generateWireGuardKeyPair().publicKey,
    });

  test('after a restart the revoked certificate is refused at once, though the distribution point is down, then serves an older list, then another CA’s', async () => {
    const first = await start();
    await registerLinuxDevice(first, 'eve', 'KEPT-1');
    await until('the list read', async () => (await enroll(first)).status === 403, 30_000);
    await first.close();

    // Whoever answers for the distribution point now: first nothing at all.
    crls.failing = true;
    const second = await start();
    const atOnce = await enroll(second);
    assert.equal(atOnce.status, 403, atOnce.text);
    assert.match(atOnce.text, /revoked/);

    // Then the CA's own list of an hour ago, genuine and current, from before the revocation.
    served = olderList;
    crls.failing = false;
    await until('the older list refused', async () => (await refusedLists(second, 'older')) > 0, 30_000);
    const afterOlder = await enroll(second);
    assert.equal(afterOlder.status, 403, afterOlder.text);

    // Then another known CA's genuine, current list.
    served = beta.writeCrl();
    await until('the other CA’s list refused', async () => (await refusedLists(second, 'other-issuer')) > 0, 30_000);
    const afterOther = await enroll(second);
    assert.equal(afterOther.status, 403, afterOther.text);
    await second.close();
  });

  test('vpn-portal mdm forget-crl lets a source serve another CA’s lists from the next start on; a location that is no source is refused', async () => {
    const configFile = path.join(dataDir, 'portal.json');
    const database = portals[0]?.database ?? '';
    writeFileSync(configFile, JSON.stringify(testPortalConfigFile(config(), dataDir, database)));
    const unknown = await runCli(['mdm', 'forget-crl', 'http://elsewhere.example/ca.crl', '--config', configFile]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /is not a source of enrollment\.clientCertificate\.crl \(http:\/\/127\.0\.0\.1:/);

    const forgotten = await runCli(['mdm', 'forget-crl', crls.url, '--config', configFile]);
    assert.equal(forgotten.code, 0, forgotten.stderr);
    assert.match(forgotten.stdout, /forgotten/);
    // Beta's list is still served: after the restart it is believed, Alpha's revocation with it gone.
    const third = await start();
    await until('Beta’s list in force', async () => (await enroll(third)).status === 200, 30_000);
    assert.equal(await refusedLists(third, 'other-issuer'), 0);
    await third.close();
  });

  test('an entry that names its CA overrules what was believed from the source before: another CA’s list is not put in force at start, and the named CA’s list replaces its note', async () => {
    // The start before believed Beta's list from the source; now the entry names Alpha's CA.
    const named = await start(true);
    const waiting = await enroll(named);
    assert.equal(waiting.status, 503, waiting.text);
    await until('Beta’s list refused', async () => (await refusedLists(named, 'other-issuer')) > 0, 30_000);

    // Alpha's current list (the revocation of eve's certificate in it) is served again.
    served = alpha.writeCrl({ file: 'named.crl' });
    await assertEnrollmentRefusedAsRevoked(tlsEnrollUrl(named), alpha, revoked);
    const pins = await named.portal.ctx.db.selectFrom('revocation_list_sources').select('issuer').execute();
    assert.deepEqual(
      pins.map((pin) => pin.issuer),
      ['CN=Alpha MDM Issuing CA'],
    );
  });
});

describe('a device whose certificate a revoked CA issued is retired', () => {
  let ca: MdmCa;
  let served: string;
  const started = portalReadingList((makeCa) => {
    ca = makeCa('Compromised MDM');
    served = ca.writeRootCrl();
    return {
      list: () => served,
      enrollment: (crlUrl) => ca.mutualTlsEnrollment({ crl: [crlUrl], crlRefresh: 'PT1S', crlMaxRetire: 10 }),
    };
  });

  test('when the root’s list revokes the issuing CA, the device it vouched for is retired, the reason naming the CA', async () => {
    const { portal } = started;
    const device = await registerLinuxDevice(portal, 'carol', 'CA-1');
    const bystander = await registerLinuxDevice(portal, 'dave', 'CA-2');
    await enrollNewCertificate(portal, ca, 'carol-laptop', 'CA-1');
    assert.equal((await portal.admin.device(device.device_id)).state, 'active');
    // Two devices bound before the portal kept which CA certificate issued a device's (migration
    // 0048): erin's under this CA's name, frank's (as its row says) under another CA's.
    const erin = await registerLinuxDevice(portal, 'erin', 'CA-3');
    const frank = await registerLinuxDevice(portal, 'frank', 'CA-4');
    await enrollNewCertificate(portal, ca, 'erin-laptop', 'CA-3');
    await enrollNewCertificate(portal, ca, 'frank-laptop', 'CA-4');
    const db = portal.portal.ctx.db;
    await db
      .updateTable('devices')
      .set({ certificate_issuer_fingerprint: null })
      .where('device_id', 'in', [erin.device_id, frank.device_id])
      .execute();
    await db
      .updateTable('devices')
      .set({ certificate_issuer: 'CN=Another MDM' })
      .where('device_id', '=', frank.device_id)
      .execute();

    served = ca.revokeIssuingCa();
    await until(
      'the devices retired',
      async () =>
        (await portal.admin.device(device.device_id)).state === 'retired' &&
        (await portal.admin.device(erin.device_id)).state === 'retired',
      30_000,
    );
    assert.deepEqual((await portal.admin.device(device.device_id)).configurations, []);
    assert.deepEqual((await portal.admin.device(erin.device_id)).configurations, []);
    assert.equal(
      (await portal.admin.device(bystander.device_id)).state,
      'registered',
      'a device without a certificate stays',
    );
    assert.equal((await portal.admin.device(frank.device_id)).state, 'active', 'a device of another CA stays');
    const reasons = (await auditRecords(db, { limit: 100 }))
      .filter((row) => row.call === 'retire_device')
      .map((row) => [row.parameters['device_id'], row.parameters['reason'] ?? ''])
      .sort();
    assert.equal(reasons.length, 2, JSON.stringify(reasons));
    const reasonOf = (deviceId: string) => reasons.find(([id]) => id === deviceId)?.[1] ?? '';
    assert.match(reasonOf(device.device_id), /^the CA that issued certificate [0-9a-f]+ revoked$/i);
    assert.match(
      reasonOf(erin.device_id),
      /^a CA named "CN=Compromised MDM[^"]*", which issued certificate [0-9a-f]+, revoked \(bound before the portal kept which CA of a name issued a certificate\)$/i,
    );
  });
});

describe('a distribution point that redirects is not followed', () => {
  let ca: MdmCa;
  let crls: CrlServer;
  let elsewhere: CrlServer;
  let portal: TestPortal;
  const log = capturedLog('error');

  before(async () => {
    ca = MdmCa.make('Redirected MDM');
    const crlFile = ca.writeCrl();
    // Where whoever answers for the plain-http distribution point sends the portal: anywhere.
    elsewhere = await CrlServer.start(() => crlFile);
    crls = await CrlServer.start(() => crlFile);
    crls.redirectTo = elsewhere.url;
    portal = await startTestPortal({
      logger: log.logger,
      config: { enrollment: ca.mutualTlsEnrollment({ crl: [crls.url], crlRefresh: 'PT1S' }) },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    await elsewhere?.close();
    ca?.remove();
  });

  test('its target is never asked; the reading fails, naming the redirect and what to configure', async () => {
    await until(
      'the failed reading flagged',
      async () => (await metricsText(portal)).includes(`vpn_portal_crl_read_failing{file="${crls.url}"} 1`),
      30_000,
    );
    await until('two readings', async () => crls.requests >= 2, 30_000);
    assert.equal(elsewhere.requests, 0);
    assert.ok(
      log.text().includes(`answered 302, a redirect to ${elsewhere.url}, which is not followed; configure the URL`),
      log.text(),
    );
  });
});
