// The legal hold calls: create_legal_hold for a user (also one already destroyed, while records
// name them) or a device, legal_holds, release_legal_hold; every bad input a 400 (an unknown
// device or hold a 404, a hold that ended a 409) with a clear message that changes nothing,
// and every change in the audit log with its key and the held user.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, bearer, makeAdminKey, ManualClock, portalState } from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

const UNTIL = '2026-06-01T00:00:00Z';

test('a hold is made for a user or a device, listed, and released; each change is audited with its key and the held user', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const desk = await makeAdminKey(portal, 'abuse-desk', { scope: 'admin' });
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const device = await portal.admin.registerDevice({
    user_id: 'bob',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'S-bob',
  });

  const made = await portal.post(
    '/create_legal_hold',
    { user_id: 'alice', reason: 'CSIRT case 2026-017', until: UNTIL },
    bearer(desk),
  );
  assert.equal(made.status, 200, made.text);
  const { legal_hold: aliceHold } = made.json() as { legal_hold: Record<string, unknown> };
  assert.match(String(aliceHold['hold_id']), /^lh_[0-9a-f]{32}$/);
  assert.deepEqual(
    { ...aliceHold, hold_id: 'x' },
    {
      hold_id: 'x',
      user_id: 'alice',
      device_id: null,
      reason: 'CSIRT case 2026-017',
      created_at: '2026-03-02T09:00:00+00:00',
      until: '2026-06-01T00:00:00+00:00',
      released_at: null,
      state: 'active',
    },
  );
  clock.advance(60_000);
  const bobHold = await portal.admin.createLegalHold({
    device_id: device.device_id,
    reason: 'order 4711',
    until: UNTIL,
  });
  assert.deepEqual([bobHold.user_id, bobHold.device_id], ['bob', device.device_id]);

  clock.advance(60_000);
  const released = await portal.post('/release_legal_hold', { hold_id: String(aliceHold['hold_id']) }, bearer(desk));
  assert.equal(released.status, 200, released.text);
  assert.deepEqual(
    (await portal.admin.legalHolds()).map((hold) => [hold.user_id, hold.state, hold.released_at]),
    [
      ['bob', 'active', null],
      ['alice', 'released', '2026-03-02T09:02:00+00:00'],
    ],
  );
  const again = await portal.post('/release_legal_hold', { hold_id: String(aliceHold['hold_id']) }, bearer(desk));
  assert.equal(again.status, 409);
  assert.equal(
    errorBody(again.text),
    `legal hold ${String(aliceHold['hold_id'])} was released at 2026-03-02T09:02:00+00:00`,
  );

  // A hold past its `until` is expired: listed as such, and not released any more.
  clock.advance(100 * 86_400_000);
  assert.deepEqual(
    (await portal.admin.legalHolds()).map((hold) => hold.state),
    ['expired', 'released'],
  );
  const late = await portal.post('/release_legal_hold', { hold_id: bobHold.hold_id }, bearer(desk));
  assert.equal(late.status, 409);
  assert.equal(errorBody(late.text), `legal hold ${bobHold.hold_id} expired at 2026-06-01T00:00:00+00:00`);

  const rows = (await auditLog(portal))
    .filter((row) => row.call.includes('legal_hold'))
    .reverse()
    .map((row) => [row.keyName, row.call, row.userId, row.status, row.parameters['reason'] ?? null]);
  assert.deepEqual(rows, [
    ['abuse-desk', 'create_legal_hold', 'alice', 200, 'CSIRT case 2026-017'],
    ['secret', 'create_legal_hold', 'bob', 200, 'order 4711'],
    ['abuse-desk', 'release_legal_hold', 'alice', 200, null],
    ['abuse-desk', 'release_legal_hold', null, 409, null],
    ['abuse-desk', 'release_legal_hold', null, 409, null],
  ]);
});

test("a destroyed user's id is held while records name them; an id nothing names is refused", async (t) => {
  const portal = await startTestPortal({ clock: new ManualClock('2026-03-02T09:00:00Z') });
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'mallory', profile_id: 'employees' });
  await portal.admin.destroy('mallory');
  const hold = await portal.admin.createLegalHold({ user_id: 'mallory', reason: 'abuse report', until: UNTIL });
  assert.deepEqual([hold.user_id, hold.state], ['mallory', 'active']);

  const before = await portalState(portal);
  const unknown = await portal.post('/create_legal_hold', { user_id: 'nobody', reason: 'typo', until: UNTIL });
  assert.equal(unknown.status, 400);
  assert.equal(errorBody(unknown.text), 'user nobody does not exist and no record names them');
  assert.deepEqual(await portalState(portal), before);
});

test('bad input is refused with a clear message and changes nothing', async (t) => {
  const portal = await startTestPortal({ clock: new ManualClock('2026-03-02T09:00:00Z') });
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const before = await portalState(portal);
  const cases: readonly [Record<string, string>, number, string][] = [
    [{ reason: 'r', until: UNTIL }, 400, 'user_id or device_id is required'],
    [
      { user_id: 'alice', device_id: 'dev_000000000000000000000000', reason: 'r', until: UNTIL },
      400,
      'give user_id or device_id, not both',
    ],
    [{ user_id: 'alice', until: UNTIL }, 400, 'missing post parameter "reason"'],
    [{ user_id: 'alice', reason: '', until: UNTIL }, 400, 'invalid value for "reason"'],
    [{ user_id: 'alice', reason: 'x'.repeat(501), until: UNTIL }, 400, 'invalid value for "reason"'],
    [{ user_id: 'alice', reason: 'r' }, 400, 'missing post parameter "until"'],
    [
      { user_id: 'alice', reason: 'r', until: 'next week' },
      400,
      'invalid value for "until": "next week" is not an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z',
    ],
    [
      { user_id: 'alice', reason: 'r', until: '2026-03-01' },
      400,
      'until (2026-03-01T00:00:00+00:00) must be in the future: a hold that ended holds nothing',
    ],
    [
      { user_id: 'alice', reason: 'r', until: '2036-03-03' },
      400,
      'until (2036-03-03T00:00:00+00:00) must be within 10 years',
    ],
    [{ device_id: 'dev_1', reason: 'r', until: UNTIL }, 400, 'invalid value for "device_id"'],
    [
      { device_id: 'dev_000000000000000000000000', reason: 'r', until: UNTIL },
      404,
      'no device has the id dev_000000000000000000000000',
    ],
  ];
  for (const [form, status, message] of cases) {
    const response = await portal.post('/create_legal_hold', form);
    assert.equal(response.status, status, `${JSON.stringify(form)}: ${response.text}`);
    assert.equal(errorBody(response.text), message, JSON.stringify(form));
  }
  for (const [form, status, message] of [
    [{}, 400, 'missing post parameter "hold_id"'],
    [{ hold_id: 'lh_1' }, 400, 'invalid value for "hold_id"'],
    [{ hold_id: `lh_${'0'.repeat(32)}` }, 404, `no legal hold has the id lh_${'0'.repeat(32)}`],
  ] as const) {
    const response = await portal.post('/release_legal_hold', form);
    assert.equal(response.status, status, `${JSON.stringify(form)}: ${response.text}`);
    assert.equal(errorBody(response.text), message, JSON.stringify(form));
  }
  assert.deepEqual(await portalState(portal), before, 'nothing changed');
  assert.deepEqual(await portal.admin.legalHolds(), []);
});
