// The device searches (the Admin API's `devices`, the console's Devices page) read an index for
// each filter, newest first, on both databases: asked of the database's own planner with the
// very query the search runs. PostgreSQL is told to avoid sequential scans where it can, as it
// would on a large table; a search with no index to use still scans, and fails here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asDeviceId, asUserId } from '../../src/shared/ids.js';
import type { Db } from '../../src/storage/database.js';
import { devicesQuery, type DeviceFilter } from '../../src/storage/devices.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
});
after(() => portal.close());

/** The plan of the search, one line per step. */
function planOf(filter: Omit<DeviceFilter, 'limit'>): Promise<string> {
  return queryPlan(db, devicesQuery(db, { ...filter, limit: 50 }).compile());
}

for (const [what, filter, index] of [
  ['a serial', { serial: 'C02XK1' }, 'devices_by_serial'],
  ['an MDM id', { mdmId: '7f3c-intune' }, 'devices_by_mdm_id'],
  // Suspended devices have a partial index of their own too (the reconcile pass reads it), which
  // holds just the rows this search wants, newest first: a planner may take either.
  ['a state', { state: 'suspended' }, 'devices_by_state|devices_suspended'],
  ['a platform', { platform: 'macos' }, 'devices_by_platform'],
  ['a user', { userId: asUserId('alice') }, 'devices_user_id'],
] as const) {
  test(`a device search by ${what} reads its index, not every device`, async () => {
    const plan = await planOf(filter);
    assert.match(plan, new RegExp(index), plan);
    assert.doesNotMatch(plan, /\bSCAN devices\b(?! USING)|Seq Scan on devices/, plan);
  });
}

test('the next page of a search by state starts in the index at the cursor', async () => {
  const plan = await planOf({ state: 'active', before: asDeviceId('dev_01JDZ0000000000000000000') });
  assert.match(plan, /devices_by_state/, plan);
});
