// A revocation list is believed only from a CA whose device certificates the portal would
// believe: a CA whose path to a trust anchor breaks a rule a device chain must keep (its parent's
// pathLenConstraint, no keyCertSign, CA:FALSE, a critical extension the portal does not process)
// has its lists refused (`issuer-path-invalid`, in the metrics and the audit log, naming the
// rule), and a configured intermediate of that kind is named at start. A list believed before
// stays in force when the next one is refused so, and the refused one still checks the chains
// presented at enrollment: a certificate either revokes is refused, whichever certificate of the
// CA the device presents.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { capturedLog, type CapturedLog } from '../../support/captured-log.js';
import {
  CA_EXTENSIONS,
  CrlServer,
  MdmCa,
  assertEnrollmentRefusedAsRevoked,
  enrollOverTls,
  type DeviceCertificateFiles,
  tlsEnrollUrl,
} from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

/** The audit log's refusals of revocation lists, by the list's location: the detail of each. */
async function refusalDetails(portal: TestPortal): Promise<Map<string, string>> {
  const rows = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter((row) => row.call === 'crl_refused');
  return new Map(rows.map((row) => [row.parameters['crl'] ?? '', `${row.parameters['reason']}: ${row.detail}`]));
}

/** What the refusal of a list signed by a CA that breaks `rule` says. */
const refusedFor = (rule: string) =>
  `issuer-path-invalid: revocation list refused: the CA it names signed it, but ${rule}: that CA vouches for no device certificate, so its lists are not believed either`;

describe('revocation lists of CAs whose path breaks a rule a device chain must keep', () => {
  const cas: MdmCa[] = [];
  const log: CapturedLog = capturedLog();
  /** Per list file: the rule its CA breaks. */
  const broken = new Map<string, string>();
  let goodList: string;
  let portal: TestPortal | undefined;

  before(async () => {
    const make = (name: string, extensions: readonly string[]) => {
      const ca = MdmCa.make(name, extensions);
      cas.push(ca);
      return ca;
    };
    const revokingOne = (ca: MdmCa) =>
      ca.revoke(ca.device('stolen', { cn: 'stolen', uri: `urn:mdm:serial:${ca.name}` }).certificate);
    for (const [name, extensions, rule] of [
      [
        'Path cert sign',
        ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,cRLSign'],
        'may not sign certificates (its keyUsage lacks keyCertSign)',
      ],
      [
        'Path critical',
        [...CA_EXTENSIONS, '1.3.6.1.4.1.55555.4=critical,ASN1:NULL'],
        'has a critical extension the portal does not process (1.3.6.1.4.1.55555.4)',
      ],
      [
        'Path not CA',
        ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,keyCertSign,cRLSign'],
        'is not a CA certificate (its basicConstraints say CA:FALSE)',
      ],
    ] as const)
      broken.set(revokingOne(make(name, extensions)), `CA certificate "CN=${name} Issuing CA" ${rule}`);
    // A CA under an issuing CA whose pathLenConstraint allows none.
    const limited = make('Path pathlen', [
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    const department = limited.subordinateCa('department', 'Path Department CA');
    const laptop = limited.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:PATH-D', issuedBy: department });
    broken.set(
      limited.subordinateCrl(department, 'department', [laptop]),
      'CA certificate "CN=Path pathlen Issuing CA" allows 0 intermediate CA certificates below it (pathLenConstraint), but the chain has 1',
    );
    const good = make('Path good', CA_EXTENSIONS);
    goodList = revokingOne(good);
    portal = await startTestPortal({
      logger: log.logger,
      config: {
        enrollment: good.mutualTlsEnrollment({
          trustAnchors: cas.map((ca) => ca.rootFile),
          intermediates: [...cas.map((ca) => ca.issuingFile), department.certificate],
          crl: [...broken.keys(), goodList],
          crlRefresh: 'PT1S',
        }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    for (const ca of cas) ca.remove();
  });

  test('each list is refused as issuer-path-invalid, naming the rule its CA breaks, and the start names each such intermediate; the list of a CA that keeps the rules is believed', async () => {
    assert.ok(portal);
    const running = portal;
    await until('the four lists refused', async () => (await refusalDetails(running)).size >= broken.size, 30_000);
    const details = await refusalDetails(running);
    assert.deepEqual(
      [...broken.keys()].map((list) => [list, details.get(list)]),
      [...broken].map(([list, rule]) => [list, refusedFor(rule)]),
    );
    const metrics = await metricsText(running);
    for (const list of broken.keys())
      assert.ok(metrics.includes(`vpn_portal_crl_read_failing{file="${list}"} 1`), list);
    assert.ok(metrics.includes(`vpn_portal_crl_entries{file="${goodList}"} 1`), 'the good CA’s list is in force');
    assert.match(metrics, /^vpn_portal_crl_refused_total\{reason="issuer-path-invalid"\} [1-9]/m);

    const named = log
      .lines()
      .filter((line) => line.level === 50 && line.msg?.startsWith('enrollment.clientCertificate.intermediates:'))
      .map((line) => line['rule']);
    assert.deepEqual(named.sort(), [...broken.values()].sort());
  });
});

describe('a CA certificate issued again without keyCertSign, after a list of the CA was believed', () => {
  let ca: MdmCa;
  let withoutCertSign: string;
  let crls: CrlServer;
  let served: string;
  let dataDir: string;
  const devices = new Map<string, DeviceCertificateFiles>();
  const portals: TestPortal[] = [];

  before(async () => {
    ca = MdmCa.make('Reissued');
    withoutCertSign = ca.reissueIssuingCa('issuing-again', [
      'basicConstraints=critical,CA:TRUE',
      'keyUsage=critical,cRLSign',
    ]);
    for (const serial of ['REISSUED-A', 'REISSUED-B', 'REISSUED-C'])
      devices.set(serial, ca.device(serial, { cn: serial, uri: `urn:mdm:serial:${serial}` }));
    served = ca.revoke(devices.get('REISSUED-A')?.certificate ?? '');
    crls = await CrlServer.start(() => served);
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-crl-reissued-'));
  });

  after(async () => {
    for (const portal of portals) await portal.close();
    await crls?.close();
    ca?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A portal on the same data folder each time, that knows the issuing CA by `intermediate` only. */
  const start = async (intermediate: string): Promise<TestPortal> => {
    const portal = await startTestPortal({
      dataDir,
      config: {
        enrollment: ca.mutualTlsEnrollment({ intermediates: [intermediate], crl: [crls.url], crlRefresh: 'PT1S' }),
      },
    });
    portals.push(portal);
    return portal;
  };
  const device = (serial: string): DeviceCertificateFiles => {
    const files = devices.get(serial);
    assert.ok(files);
    return files;
  };

  test('after a restart that knows the CA only by that certificate, the newer list is refused and the one believed before stays in force; a certificate either revokes is still refused, presented with the CA’s good certificate, and another one makes that certificate known', async () => {
    const first = await start(ca.issuingFile);
    await until(
      'the first list in force',
      async () => (await metricsText(first)).includes(`vpn_portal_crl_entries{file="${crls.url}"} 1`),
      30_000,
    );
    await first.close();

    served = ca.revoke(device('REISSUED-B').certificate);
    const second = await start(withoutCertSign);
    await until('the newer list refused', async () => (await refusalDetails(second)).has(crls.url), 30_000);
    assert.equal(
      (await refusalDetails(second)).get(crls.url),
      refusedFor('CA certificate "CN=Reissued Issuing CA" may not sign certificates (its keyUsage lacks keyCertSign)'),
    );
    assert.ok(
      (await metricsText(second)).includes(`vpn_portal_crl_entries{file="${crls.url}"} 1`),
      'the list believed before stays in force',
    );

    for (const serial of devices.keys())
      await second.admin.registerDevice({ user_id: 'rita', profile_id: 'employees', platform: 'linux', serial });
    const url = tlsEnrollUrl(second);
    // The devices present the CA's first certificate, which keeps the rules.
    await assertEnrollmentRefusedAsRevoked(url, ca, device('REISSUED-A'), 'now');
    await assertEnrollmentRefusedAsRevoked(url, ca, device('REISSUED-B'), 'now');
    const kept = await enrollOverTls(url, ca, device('REISSUED-C'), {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(kept.status, 200, kept.text);
    await until(
      'the newer list believed, its CA known by the chain just enrolled',
      async () => (await metricsText(second)).includes(`vpn_portal_crl_entries{file="${crls.url}"} 2`),
      30_000,
    );
  });
});
