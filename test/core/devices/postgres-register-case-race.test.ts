// Two registrations at once of one serial in two letter cases (an MDM's automation and an
// administrator, two portal instances): the unique indexes compare bytes, so only the lock a
// registration holds on its identifiers, letter case aside, keeps both from finding no such
// device and both writing theirs. The first registration is held right after it looked for a
// device of that serial in another case, so the race happens every time; the second waits for
// it and is refused with 409. PostgreSQL only: the held statement keeps its connection, and
// SQLite's write transactions run one at a time.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { registerDevice } from '../../../src/core/devices/index.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

test('of two registrations at once of one serial in two letter cases, one registers the device and the other answers 409', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('"devices"') && text.includes('lower('),
  );
  const ctx = portal.portal.ctx;
  const first = registerDevice(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    {
      userId: asUserId('alice'),
      profileId: asProfileId('employees'),
      platform: 'macos',
      serial: 'c02race1abcd',
      mdmId: undefined,
    },
  );
  // Kept from an unhandled rejection while the second registration runs; judged below.
  const outcome = first.then(
    (device) => device,
    (error: unknown) => error,
  );
  const held = await Promise.race([hold.reached.then(() => true), outcome.then(() => false)]);
  assert.ok(held, 'the registration looked for a device holding its serial in another letter case');
  let secondDone = false;
  const second = portal
    .post('/register_device', { user_id: 'bob', profile_id: 'employees', platform: 'macos', serial: 'C02RACE1ABCD' })
    .finally(() => {
      secondDone = true;
    });
  await sleep(500);
  const waited = !secondDone;
  hold.release();

  const registered = await outcome;
  assert.ok(!(registered instanceof Error), `the first registration stands, not: ${String(registered)}`);
  const answer = await second;
  assert.equal(answer.status, 409, answer.text);
  assert.match(
    errorBody(answer.text),
    /^"serial" "C02RACE1ABCD" is already held by a live device in another letter case/,
  );
  assert.ok(waited, 'the second registration waited for the first');
  const devices = await ctx.db.selectFrom('devices').select(['serial', 'user_id']).execute();
  assert.deepEqual(devices, [{ serial: 'c02race1abcd', user_id: 'alice' }]);
});
