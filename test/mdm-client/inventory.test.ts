// The MDM clients against a local stand-in that serves Microsoft Graph's and Jamf Pro's documented
// request and answer shapes (the real services cannot be reached from the tests): the token by
// client credentials, every page followed, serials and ids both read; a service that is down, an
// answer of another shape or a next link to another origin is an error, never an empty inventory.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { MdmInventorySource } from '../../src/config/portal-config.js';
import { MdmInventoryError, readMdmInventory } from '../../src/mdm-client/inventory.js';
import { jamfRecordsWithSerials } from '../../src/mdm-client/jamf.js';
import { Secret } from '../../src/shared/secret.js';
import { startEndlessBody } from '../support/endless-body.js';
import { MdmStandIn, STAND_IN_CLIENT_ID, STAND_IN_CLIENT_SECRET, STAND_IN_TENANT } from '../support/mdm-stand-in.js';

const DEVICES = [
  { id: 'aaaaaaaa-0000-0000-0000-000000000001', serial: 'C02AAA1', kind: 'computer' as const },
  { id: 'aaaaaaaa-0000-0000-0000-000000000002', serial: 'C02AAA2', kind: 'computer' as const },
  { id: 'aaaaaaaa-0000-0000-0000-000000000003', serial: 'C02AAA3', kind: 'computer' as const },
  { id: 'bbbbbbbb-0000-0000-0000-000000000004', serial: 'DMPBBB4', kind: 'mobile' as const },
  { id: 'bbbbbbbb-0000-0000-0000-000000000005', serial: 'DMPBBB5', kind: 'mobile' as const },
];

describe('the MDM inventory clients', () => {
  let mdm: MdmStandIn;
  let intune: MdmInventorySource;
  let jamf: MdmInventorySource;

  before(async () => {
    mdm = await MdmStandIn.start();
    intune = {
      provider: 'intune',
      clientId: STAND_IN_CLIENT_ID,
      clientSecret: new Secret(STAND_IN_CLIENT_SECRET),
      tokenUrl: `${mdm.url}/${STAND_IN_TENANT}/oauth2/v2.0/token`,
      graphUrl: `${mdm.url}/v1.0`,
    };
    jamf = {
      provider: 'jamf',
      url: `${mdm.url}/jamf`,
      clientId: STAND_IN_CLIENT_ID,
      clientSecret: new Secret(STAND_IN_CLIENT_SECRET),
    };
  });

  beforeEach(() => {
    mdm.devices = [...DEVICES];
    mdm.down = false;
    mdm.jsonAnswer = undefined;
    mdm.afterJamfPage = undefined;
    mdm.jamfIgnoresPage = false;
    mdm.jamfTotalCountOffset = 0;
    mdm.graphLinksBack = undefined;
    mdm.requests.length = 0;
  });

  after(async () => {
    await mdm?.close();
  });

  test('Intune: an app token by client credentials, then every page of managedDevices through @odata.nextLink', async () => {
    const inventory = await readMdmInventory(intune);
    assert.deepEqual([...inventory.ids].sort(), DEVICES.map((device) => device.id).sort());
    assert.deepEqual([...inventory.serials].sort(), DEVICES.map((device) => device.serial).sort());
    const [token, ...pages] = mdm.requests;
    assert.deepEqual(token?.form, {
      grant_type: 'client_credentials',
      client_id: STAND_IN_CLIENT_ID,
      client_secret: STAND_IN_CLIENT_SECRET,
      scope: `${mdm.url}/.default`,
    });
    assert.equal(pages.length, 3, 'five devices in pages of two');
    for (const page of pages) {
      assert.match(page.url, /^\/v1\.0\/deviceManagement\/managedDevices\?\$select=id,serialNumber/);
      assert.equal(page.consistencyLevel, 'eventual');
      assert.equal(page.authorization, 'Bearer stand-in-access-token');
    }
  });

  test('Jamf Pro: a token from /api/oauth/token, then computers and mobile devices, each paged to totalCount', async () => {
    const inventory = await readMdmInventory(jamf);
    assert.deepEqual([...inventory.serials].sort(), DEVICES.map((device) => device.serial).sort());
    assert.deepEqual([...inventory.ids].sort(), DEVICES.map((device) => device.id).sort(), "a device's id is its UDID");
    assert.deepEqual(mdm.requests[0]?.form, {
      grant_type: 'client_credentials',
      client_id: STAND_IN_CLIENT_ID,
      client_secret: STAND_IN_CLIENT_SECRET,
    });
    assert.equal(
      mdm.requests.filter((request) => request.url.startsWith('/jamf/api/v1/computers-inventory?section=HARDWARE'))
        .length,
      2,
    );
    assert.equal(mdm.requests.filter((request) => request.url.startsWith('/jamf/api/v2/mobile-devices')).length, 1);
  });

  test('Jamf Pro: the records that hold a serial, letter case aside, read with an RSQL filter for computers and mobile devices', async () => {
    if (jamf.provider !== 'jamf') throw new Error('not Jamf');
    mdm.devices = [
      ...DEVICES,
      { id: 'cccccccc-0000-0000-0000-000000000006', serial: 'c02aaa1', kind: 'computer' },
      { id: 'cccccccc-0000-0000-0000-000000000007', serial: 'C02"Q\\1', kind: 'computer' },
    ];
    const computers = await jamfRecordsWithSerials(jamf, ['computer'], ['C02AAA1', 'C02"Q\\1', 'C02NONE']);
    assert.deepEqual(Object.fromEntries(computers), {
      C02AAA1: ['aaaaaaaa-0000-0000-0000-000000000001', 'cccccccc-0000-0000-0000-000000000006'],
      'C02"Q\\1': ['cccccccc-0000-0000-0000-000000000007'],
      C02NONE: [],
    });
    const mobile = await jamfRecordsWithSerials(jamf, ['mobile'], ['dmpbbb4']);
    assert.deepEqual(Object.fromEntries(mobile), { DMPBBB4: ['bbbbbbbb-0000-0000-0000-000000000004'] });
    const lists = mdm.requests.filter((request) => request.method === 'GET').map((request) => request.url);
    assert.equal(lists.length, 4, 'one request a serial, none for the whole inventory');
    assert.ok(lists[1]?.includes(`filter=${encodeURIComponent('hardware.serialNumber=="C02\\"Q\\\\1"')}`));
    assert.equal(mdm.requests.filter((request) => request.method === 'POST').length, 2, 'one token a call');
  });

  test('JSON: the list of serials, fetched with the configured headers', async () => {
    const inventory = await readMdmInventory({
      provider: 'json',
      url: `${mdm.url}/inventory.json`,
      headers: { Authorization: new Secret('Bearer stand-in-access-token') },
    });
    assert.deepEqual([...inventory.serials].sort(), DEVICES.map((device) => device.serial).sort());
  });

  test("Intune with compliance: every page selects Graph's compliance properties, and each device's state, grace period and check-in are read", async () => {
    const compliance = [
      { complianceState: 'compliant', lastSync: '2026-11-28T07:30:00.1234567Z' },
      { complianceState: 'noncompliant' },
      { complianceState: 'inGracePeriod', gracePeriodEnds: '2026-12-01T00:00:00Z' },
      { complianceState: 'inGracePeriod', lastSync: '0001-01-01T00:00:00Z' },
      { complianceState: 'configManager' },
    ];
    mdm.devices = DEVICES.map((device, index) => ({ ...device, ...compliance[index] }));
    const inventory = await readMdmInventory(intune, { compliance: true });
    const pages = mdm.requests.slice(1);
    assert.equal(pages.length, 3);
    for (const page of pages)
      assert.match(
        page.url,
        /\$select=id,serialNumber,complianceState,complianceGracePeriodExpirationDateTime,lastSyncDateTime/,
      );
    const bySerial = new Map(inventory.compliance.map((record) => [record.serial, record]));
    assert.equal(inventory.compliance.length, 5);
    assert.deepEqual(bySerial.get('C02AAA1')?.state, { kind: 'compliant' });
    assert.equal(bySerial.get('C02AAA1')?.lastCheckIn?.toISOString(), '2026-11-28T07:30:00.123Z');
    assert.equal(bySerial.get('C02AAA1')?.id, DEVICES[0]?.id);
    assert.deepEqual(bySerial.get('C02AAA2')?.state, { kind: 'noncompliant' });
    assert.deepEqual(bySerial.get('C02AAA3')?.state, {
      kind: 'in-grace-period',
      until: new Date('2026-12-01T00:00:00Z'),
    });
    assert.deepEqual(
      bySerial.get('DMPBBB4')?.state,
      { kind: 'in-grace-period', until: null },
      "Graph's 0001-01-01 is no date",
    );
    assert.equal(bySerial.get('DMPBBB4')?.lastCheckIn, null);
    assert.deepEqual(bySerial.get('DMPBBB5')?.state, { kind: 'undetermined', reported: 'configManager' });
  });

  test("Intune: a date without a zone is read as UTC, as Graph means it, not in the portal's local time", async () => {
    mdm.devices = DEVICES.slice(0, 3).map((device, index) => ({
      ...device,
      ...[
        { complianceState: 'inGracePeriod', gracePeriodEnds: '2026-12-01T10:00:00', lastSync: '2026-11-28T07:30:00' },
        { lastSync: '2026-11-28T07:30:00.1234567' },
        { lastSync: '2026-11-28T07:30:00+01:00' },
      ][index],
    }));
    // A portal five and a half hours ahead of UTC (Node reads TZ again when it is set).
    const zone = process.env['TZ'];
    process.env['TZ'] = 'Asia/Kolkata';
    let inventory: Awaited<ReturnType<typeof readMdmInventory>>;
    try {
      assert.equal(
        new Date(2026, 10, 28, 7, 30).toISOString(),
        '2026-11-28T02:00:00.000Z',
        'the local time is not UTC',
      );
      inventory = await readMdmInventory(intune, { compliance: true });
    } finally {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
    const bySerial = new Map(inventory.compliance.map((record) => [record.serial, record]));
    assert.deepEqual(bySerial.get('C02AAA1')?.state, {
      kind: 'in-grace-period',
      until: new Date('2026-12-01T10:00:00Z'),
    });
    assert.equal(bySerial.get('C02AAA1')?.lastCheckIn?.toISOString(), '2026-11-28T07:30:00.000Z');
    assert.equal(bySerial.get('C02AAA2')?.lastCheckIn?.toISOString(), '2026-11-28T07:30:00.123Z');
    assert.equal(
      bySerial.get('C02AAA3')?.lastCheckIn?.toISOString(),
      '2026-11-28T06:30:00.000Z',
      'a zone given is kept',
    );
  });

  test('Intune without compliance selects only id and serialNumber, and reports no compliance', async () => {
    const inventory = await readMdmInventory(intune);
    assert.deepEqual(inventory.compliance, []);
    for (const page of mdm.requests.slice(1)) assert.match(page.url, /\$select=id,serialNumber(&|$)/);
  });

  test('JSON: strings and objects side by side; "compliant" is read, an object without it is presence only', async () => {
    mdm.jsonAnswer = [
      'C02AAA1',
      { serial: 'C02AAA2', compliant: false },
      { serial: 'C02AAA3', id: 'mdm-3', compliant: true },
      { id: 'mdm-4' },
    ];
    const source: MdmInventorySource = {
      provider: 'json',
      url: `${mdm.url}/inventory.json`,
      headers: { Authorization: new Secret('Bearer stand-in-access-token') },
    };
    const inventory = await readMdmInventory(source, { compliance: true });
    assert.deepEqual([...inventory.serials].sort(), ['C02AAA1', 'C02AAA2', 'C02AAA3']);
    assert.deepEqual([...inventory.ids].sort(), ['C02AAA1', 'mdm-3', 'mdm-4']);
    assert.deepEqual(inventory.compliance, [
      { serial: 'C02AAA2', id: null, state: { kind: 'noncompliant' }, lastCheckIn: null },
      { serial: 'C02AAA3', id: 'mdm-3', state: { kind: 'compliant' }, lastCheckIn: null },
    ]);
    assert.deepEqual((await readMdmInventory(source)).compliance, [], 'not asked for: none read');
  });

  test('JSON: a malformed entry makes the inventory unreadable, with a message naming the entry', async () => {
    const source: MdmInventorySource = {
      provider: 'json',
      url: `${mdm.url}/inventory.json`,
      headers: { Authorization: new Secret('Bearer stand-in-access-token') },
    };
    const cases: [unknown, RegExp][] = [
      [
        { serial: 'C02AAA2', compliant: 'no' },
        /entry 1 \(\{"serial":"C02AAA2","compliant":"no"\}\) is not a device: .*boolean.* at "compliant"/,
      ],
      [{ serial: 'C02AAA2', Compliant: false }, /entry 1 .*Compliant/],
      [{ compliant: false }, /entry 1 .*needs "serial" or "id"/],
      [42, /entry 1 \(42\) is not a device: a string, or an object/],
      ['', /entry 1 \(""\) is not a device: an empty string names no device/],
    ];
    for (const [entry, message] of cases) {
      mdm.jsonAnswer = ['C02AAA1', entry, 'C02AAA3'];
      await assert.rejects(readMdmInventory(source, { compliance: true }), (error) => {
        assert.ok(error instanceof MdmInventoryError);
        assert.match(error.message, message);
        return true;
      });
    }
  });

  test('a service that is down, a wrong secret, an unexpected shape or a next link elsewhere is an error, not an empty inventory', async () => {
    mdm.down = true;
    for (const source of [intune, jamf])
      await assert.rejects(
        readMdmInventory(source),
        (error) => error instanceof MdmInventoryError && /answered 503/.test(error.message),
      );
    mdm.down = false;
    await assert.rejects(
      readMdmInventory({ ...intune, clientSecret: new Secret('wrong') } as MdmInventorySource),
      (error) => {
        assert.ok(error instanceof MdmInventoryError);
        assert.match(error.message, /answered 401/);
        assert.doesNotMatch(error.message, /wrong|stand-in-secret/, 'no secret in the message');
        return true;
      },
    );
    await assert.rejects(
      readMdmInventory({ provider: 'json', url: `${mdm.url}/v1.0/deviceManagement/managedDevices`, headers: {} }),
      MdmInventoryError,
    );
    await assert.rejects(
      readMdmInventory({ provider: 'json', url: 'http://127.0.0.1:2/inventory.json', headers: {} }),
      MdmInventoryError,
    );
    // Graph's next link on another origin would carry the token away.
    await assert.rejects(
      readMdmInventory({
        ...intune,
        graphUrl: `${mdm.url.replace('127.0.0.1', 'localhost')}/v1.0`,
      } as MdmInventorySource),
      /another origin/,
    );
  });

  test('Jamf Pro: a computer deleted between two pages makes the inventory unreadable, not one without the computer the offsets skipped', async () => {
    const computers = ['1', '2', '3', '4', '5'].map((n) => ({
      id: `cccccccc-0000-0000-0000-00000000000${n}`,
      serial: `C02CCC${n}`,
      kind: 'computer' as const,
    }));
    mdm.devices = computers;
    // Computer 1 leaves Jamf once page 0 is read: page 1 now starts at computer 4, and computer 3,
    // still managed, is on no page read, while the new totalCount (4) is met.
    mdm.afterJamfPage = (kind, page) => {
      if (kind === 'computer' && page === 0) mdm.devices = computers.slice(1);
    };
    await assert.rejects(readMdmInventory(jamf), (error) => {
      assert.ok(error instanceof MdmInventoryError);
      assert.match(error.message, /totalCount changed from 5 to 4/);
      return true;
    });
  });

  test('Jamf Pro: an empty page before totalCount, a short one, or a server that answers page 0 to every page makes the inventory unreadable', async () => {
    const computers = ['1', '2', '3', '4'].map((n) => ({
      id: `cccccccc-0000-0000-0000-00000000000${n}`,
      serial: `C02CCC${n}`,
      kind: 'computer' as const,
    }));
    mdm.devices = computers;
    // Jamf counts five computers but lists four: the third page is empty.
    mdm.jamfTotalCountOffset = 1;
    await assert.rejects(readMdmInventory(jamf), /page 2 is empty after 4 of 5 records/);
    // Three listed, four counted: the second page is short.
    mdm.devices = computers.slice(0, 3);
    await assert.rejects(readMdmInventory(jamf), /page 1 is short \(1 records\) after 3 of 4/);
    // Page 0 again and again: its computers twice, the others never.
    mdm.devices = computers.slice(0, 3);
    mdm.jamfTotalCountOffset = 0;
    mdm.jamfIgnoresPage = true;
    await assert.rejects(readMdmInventory(jamf), /appears twice \(page 1\)/);
  });

  test('Intune: a next link back to a page already read is unreadable, found within a few pages rather than after thousands', {
    timeout: 5000,
  }, async () => {
    // Pages at $skiptoken 0, 2 and 4; the one at 2 links back to 0, whose next link is 2 again.
    mdm.graphLinksBack = { from: 2, to: 0 };
    await assert.rejects(readMdmInventory(intune, { compliance: true }), (error) => {
      assert.ok(error instanceof MdmInventoryError);
      assert.match(error.message, /leads back to a page already read/);
      return true;
    });
    const pages = mdm.requests.filter((request) => request.url.startsWith('/v1.0/deviceManagement/managedDevices'));
    assert.ok(pages.length <= 4, `${pages.length} pages read`);
  });

  test('Intune: a device listed on two pages is one device, with one compliance record', async () => {
    const [first, second, third] = DEVICES;
    assert.ok(first !== undefined && second !== undefined && third !== undefined);
    mdm.devices = [first, second, { ...first, complianceState: 'noncompliant' }, third];
    const inventory = await readMdmInventory(intune, { compliance: true });
    assert.deepEqual([...inventory.ids].sort(), [first.id, second.id, third.id].sort());
    assert.deepEqual(
      inventory.compliance.map((record) => record.id),
      [first.id, second.id, third.id],
    );
  });

  test('an answer larger than 32 MiB, chunked with no Content-Length, is refused after reading about 32 MiB, not all of it', async () => {
    const endless = await startEndlessBody(200 * 1024 * 1024);
    try {
      await assert.rejects(
        readMdmInventory({ provider: 'json', url: `${endless.url}/inventory.json`, headers: {} }),
        (error) => {
          assert.ok(error instanceof MdmInventoryError);
          assert.match(error.message, /answered more than 33554432 bytes \(32 MiB, the limit\)/);
          return true;
        },
      );
      const sent = await endless.closed();
      assert.ok(sent < (32 + 16) * 1024 * 1024, `the server wrote ${sent} bytes before the portal hung up`);
    } finally {
      await endless.close();
    }
  });
});
