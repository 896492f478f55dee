// `vpn-portal mdm sync --dry-run` against a local stand-in of Jamf Pro's API (the real one cannot
// be reached from the tests): it prints which devices a pass would retire (missed by the pass
// before too) and which it would note as missed for the first time, and changes nothing;
// it says so when the inventory cannot be read or would retire too many; without --dry-run it
// refuses (the portal does the pass that retires); with compliance it lists what a pass would
// suspend and resume, devices suspended already for another reason not counted against the
// limit. `vpn-portal mdm confirm-crl` with nothing held
// says so, and refuses a SHA-256 that names no held list.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { asDeviceId } from '../../src/shared/ids.js';
import { replaceInventoryMisses } from '../../src/storage/mdm-inventory-misses.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../support/mdm-stand-in.js';
import { runCli } from '../support/portal-process.js';
import { defaultTestConfig, startTestPortal, type TestPortal } from '../support/test-portal.js';

const DEVICES = ['JMF-1', 'JMF-2', 'JMF-3', 'JMF-4'].map((serial, index) => ({
  id: `udid-${index}`,
  serial,
  kind: index % 2 === 0 ? ('computer' as const) : ('mobile' as const),
}));

describe('vpn-portal mdm sync --dry-run', () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let dataDir: string;
  let configFile: string;

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.devices = [...DEVICES];
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-mdm-'));
    // The portal runs no inventory pass itself: whatever changes would be the command's doing.
    portal = await startTestPortal({ dataDir });
    const secretFile = path.join(dataDir, 'jamf-secret');
    writeFileSync(secretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
    configFile = path.join(dataDir, 'portal.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        ...defaultTestConfig,
        dataDir,
        database: portal.database,
        mdmInventory: { ...mdm.jamfConfig(secretFile), maxRetirePerPass: 1 },
      }),
    );
    for (const device of DEVICES)
      await portal.admin.registerDevice({
        user_id: 'alice',
        profile_id: 'employees',
        platform: 'macos',
        serial: device.serial,
      });
    await new Promise((resolve) => setTimeout(resolve, 1100));
  });

  after(async () => {
    await portal?.close();
    await mdm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const sync = (...args: string[]) => runCli(['mdm', 'sync', ...args, '--config', configFile]);
  const snapshot = async () => JSON.stringify((await portal.admin.devices()).devices);

  /** What the portal's own last pass noted: these devices missed from the inventory. */
  const missedByTheLastPass = async (...serials: string[]) => {
    const devices = (await portal.admin.devices()).devices.filter((device) => serials.includes(device.serial ?? ''));
    await replaceInventoryMisses(
      portal.portal.ctx.db,
      devices.map((device) => ({ deviceId: asDeviceId(device.device_id), firstMissedAt: '2026-11-30T10:00:00+00:00' })),
    );
  };

  test('it prints a device missed for the first time, which the pass after retires if it misses it too, and changes nothing', async () => {
    const before = await snapshot();
    mdm.devices = DEVICES.filter((device) => device.serial !== 'JMF-2');
    const result = await sync('--dry-run');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^jamf inventory: 3 devices; 4 live devices compared by serial$/m);
    assert.match(result.stdout, /^a pass would retire nothing now$/m);
    assert.match(result.stdout, /^1 missed for the first time: a pass notes them, and the pass after retires those/m);
    assert.match(result.stdout, /^dev_\w+ +alice +JMF-2 +- +\S+$/m);
    assert.equal(await snapshot(), before);
  });

  test('it prints the device a pass would retire, missed by the pass before too, and changes nothing', async () => {
    await missedByTheLastPass('JMF-2');
    const before = await snapshot();
    mdm.devices = DEVICES.filter((device) => device.serial !== 'JMF-2');
    const result = await sync('--dry-run');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /a pass would retire 1, missed by the pass before too \(at most 1 a pass\):/);
    assert.match(result.stdout, /^dev_\w+ +alice +JMF-2 +- +2026-11-30T10:00:00\+00:00$/m);
    assert.equal(await snapshot(), before);
  });

  test('too many gone: it says a pass would retire nothing', async () => {
    await missedByTheLastPass('JMF-3', 'JMF-4');
    mdm.devices = DEVICES.slice(0, 2);
    const result = await sync('--dry-run');
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /a pass would retire nothing: 2 devices are gone, more than mdmInventory\.maxRetirePerPass allows \(1\)/,
    );
  });

  test('an unreachable inventory: exit 1, and a pass would retire nothing', async () => {
    mdm.down = true;
    const result = await sync('--dry-run');
    mdm.down = false;
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /the jamf inventory cannot be read: POST http:\/\/127\.0\.0\.1:\d+\/jamf\/api\/oauth\/token answered 503; a pass would retire nothing/,
    );
    assert.doesNotMatch(result.stderr, new RegExp(STAND_IN_CLIENT_SECRET));
  });

  test('without --dry-run it refuses', async () => {
    const result = await sync();
    assert.equal(result.code, 2);
    assert.match(result.stderr, /mdm sync needs --dry-run/);
  });

  test('confirm-crl without a held list says so; an unknown or malformed SHA-256 is refused and changes nothing', async () => {
    const confirmCrl = (...args: string[]) => runCli(['mdm', 'confirm-crl', ...args, '--config', configFile]);
    const none = await confirmCrl();
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /^no revocation list is held$/m);
    const unknown = await confirmCrl('0'.repeat(64));
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /no revocation list 0{64} is held/);
    const malformed = await confirmCrl('not-a-digest');
    assert.equal(malformed.code, 2);
    assert.match(malformed.stderr, /"not-a-digest" is not a SHA-256/);
    assert.equal((await portal.portal.ctx.db.selectFrom('revocation_list_holds').selectAll().execute()).length, 0);
  });
});

describe('vpn-portal mdm sync --dry-run with compliance', () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let dataDir: string;
  let configFile: string;

  before(async () => {
    mdm = await MdmStandIn.start();
    dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-mdm-compliance-'));
    portal = await startTestPortal({ dataDir });
    configFile = path.join(dataDir, 'portal.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        ...defaultTestConfig,
        dataDir,
        database: portal.database,
        mdmInventory: { ...mdm.jsonConfig(), compliance: { maxSuspendPerPass: 1 } },
      }),
    );
    for (const serial of ['JSN-1', 'JSN-2', 'JSN-3'])
      await portal.admin.registerDevice({ user_id: 'bob', profile_id: 'employees', platform: 'linux', serial });
    await new Promise((resolve) => setTimeout(resolve, 1100));
  });

  after(async () => {
    await portal?.close();
    await mdm?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const sync = (...args: string[]) => runCli(['mdm', 'sync', '--dry-run', ...args, '--config', configFile]);
  const snapshot = async () => JSON.stringify((await portal.admin.devices()).devices);

  test('it prints the devices a pass would suspend, with what the MDM said, and changes nothing', async () => {
    const before = await snapshot();
    mdm.jsonAnswer = ['JSN-1', { serial: 'JSN-2', compliant: false }, { serial: 'JSN-3', compliant: true }];
    const result = await sync();
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /a pass would retire nothing/);
    assert.match(result.stdout, /a pass would suspend 1 \(at most 1 a pass\):/);
    assert.match(result.stdout, /^dev_\w+ +bob +JSN-2 +- +noncompliant +noncompliant$/m);
    assert.match(result.stdout, /^a pass would resume nothing$/m);
    const json = JSON.parse((await sync('--json')).stdout) as { compliance: { suspend: { serial: string }[] } };
    assert.deepEqual(
      json.compliance.suspend.map((change) => change.serial),
      ['JSN-2'],
    );
    assert.equal(await snapshot(), before);
  });

  test('more than maxSuspendPerPass: it says a pass would suspend nothing, and lists them', async () => {
    mdm.jsonAnswer = [
      { serial: 'JSN-1', compliant: false },
      { serial: 'JSN-2', compliant: false },
      { serial: 'JSN-3', compliant: true },
    ];
    const result = await sync();
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /a pass would suspend nothing: 2 devices are out of compliance, more than mdmInventory\.compliance\.maxSuspendPerPass allows \(1\)/,
    );
    assert.match(result.stdout, /JSN-1/);
  });

  test('a device suspended already for another reason is listed but not counted against maxSuspendPerPass', async () => {
    const lost = (await portal.admin.devices({ serial: 'JSN-1' })).devices[0]?.device_id ?? '';
    await portal.admin.suspendDevice({ device_id: lost, reason: 'lost' });
    mdm.jsonAnswer = [
      { serial: 'JSN-1', compliant: false },
      { serial: 'JSN-2', compliant: false },
      { serial: 'JSN-3', compliant: true },
    ];
    const result = await sync();
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /a pass would suspend 2 \(at most 1 a pass; 1 of them suspended already for another reason, not counted: they stay suspended for this one too\):/,
    );
    await portal.admin.resumeDevice(lost);
  });
});
