// A device registered with its identifier in another letter case than the MDM writes it (an
// Intune device id copied from a tool that prints GUIDs in capitals, an Apple serial typed in
// small letters) is the same device: the inventory pass neither retires it as gone nor passes it
// over when the MDM finds it out of compliance. Against the local stand-in of Microsoft Graph.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type TestContext, test } from 'node:test';
import type { InventoryPass } from '../../../src/core/devices/index.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../../support/mdm-stand-in.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal } from '../../support/test-portal.js';

async function portalMatching(t: TestContext, matches: 'serial' | 'mdm_id', mdm: MdmStandIn) {
  const directory = mkdtempSync(path.join(tmpdir(), 'mdm-letter-case-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const secretFile = path.join(directory, 'intune-secret');
  writeFileSync(secretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
  const clock = shiftedClock();
  // Passes only at start and when the story runs one.
  const portal = await startTestPortal({
    clock,
    config: {
      mdmInventory: {
        ...mdm.intuneConfig(secretFile),
        interval: 'P1D',
        matches,
        maxRetirePerPass: 5,
        compliance: { undetermined: 'keep', staleAfter: null, maxSuspendPerPass: 5 },
      },
    },
  });
  t.after(() => portal.close());
  const schedule = portal.portal.mdmInventory ?? assert.fail('no inventory schedule');
  // The pass the portal runs at start ends first.
  await schedule.runNow();
  return { portal, clock, pass: (): Promise<InventoryPass> => schedule.runNow() };
}

test('a device whose mdm_id the MDM writes in small letters is neither retired as gone nor spared a suspension', async (t) => {
  const mdm = await MdmStandIn.start();
  t.after(() => mdm.close());
  mdm.devices = [
    { id: 'aaaaaaaa-1111-4111-8111-000000000001', serial: 'C02AAA' },
    { id: 'bbbbbbbb-2222-4222-8222-000000000002', serial: 'C02BBB', complianceState: 'noncompliant' },
  ];
  const { portal, clock, pass } = await portalMatching(t, 'mdm_id', mdm);
  const laptop = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'windows',
    mdm_id: 'AAAAAAAA-1111-4111-8111-000000000001',
  });
  const phone = await portal.admin.registerDevice({
    user_id: 'bob',
    profile_id: 'employees',
    platform: 'windows',
    mdm_id: 'BBBBBBBB-2222-4222-8222-000000000002',
  });
  clock.advance(2000);

  await pass();
  await pass();
  assert.equal(
    (await portal.admin.device(laptop.device_id)).state,
    'registered',
    'alice’s laptop is in the inventory, only written in other letters: it is not gone',
  );
  const suspended = await portal.admin.device(phone.device_id);
  assert.equal(suspended.state, 'suspended', 'bob’s device is out of compliance');
  assert.equal(suspended.suspension?.reason, 'noncompliant');
});

test('a device whose serial was typed in small letters is the MDM’s device of that serial', async (t) => {
  const mdm = await MdmStandIn.start();
  t.after(() => mdm.close());
  mdm.devices = [{ id: 'cccccccc-3333-4333-8333-000000000003', serial: 'C02CCC' }];
  const { portal, clock, pass } = await portalMatching(t, 'serial', mdm);
  const laptop = await portal.admin.registerDevice({
    user_id: 'carol',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'c02ccc',
  });
  clock.advance(2000);
  const first = await pass();
  const second = await pass();
  assert.deepEqual(
    [first.outcome === 'unreadable' ? [] : first.missed, second.outcome === 'unreadable' ? [] : second.gone],
    [[], []],
  );
  assert.equal((await portal.admin.device(laptop.device_id)).state, 'registered');
});
