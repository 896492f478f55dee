// Durations past any sane bound, on every Admin API call that takes one: a 400 that says the
// bound (P100Y), never a 500 from a date past what JavaScript can hold, and never an expiry that
// passes a comparison because six-digit years sort as text before four-digit ones.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, bearer, makeAdminKey, ManualClock, twoProfiles } from '../../support/admin-keys.js';
import { startTestPortal, type ApiResponse } from '../../support/test-portal.js';

const TOO_LONG = ['P8000Y', 'P999999999Y', 'PT99999999999999999999S', 'P101Y'];
const CONNECTION_ID = Buffer.alloc(32, 7).toString('base64');
const WEBHOOK_ID = `wh_${'0'.repeat(24)}`;

/** Every call that takes a duration, the parameter, and the other parameters it needs. */
const calls: readonly { path: string; parameter: string; others: Record<string, string> }[] = [
  { path: '/create_admin_key', parameter: 'expires_in', others: { name: 'long' } },
  { path: '/create', parameter: 'expires_in', others: { user_id: 'alice', profile_id: 'employees' } },
  { path: '/extend', parameter: 'expires_in', others: { user_id: 'alice', connection_id: CONNECTION_ID } },
  { path: '/enrollment_token', parameter: 'expires_in', others: { user_id: 'alice', profile_id: 'employees' } },
  { path: '/enrollment_token', parameter: 'valid_for', others: { user_id: 'alice', profile_id: 'employees' } },
  { path: '/rotate_webhook_secret', parameter: 'overlap', others: { webhook_id: WEBHOOK_ID } },
];

function refusedAs400(response: ApiResponse, what: string): string {
  assert.equal(response.status, 400, `${what}: ${response.text}`);
  const { error } = response.json() as { error: string };
  assert.equal(typeof error, 'string', what);
  return error;
}

test('every call that takes a duration answers 400 to one longer than P100Y, and changes nothing', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  for (const call of calls) {
    for (const duration of TOO_LONG) {
      const what = `${call.path} ${call.parameter}=${duration}`;
      const error = refusedAs400(await portal.post(call.path, { ...call.others, [call.parameter]: duration }), what);
      assert.match(error, new RegExp(`^invalid value for "${call.parameter}": `), what);
    }
  }
  const keys = await portal.get('/admin_keys');
  assert.deepEqual((keys.json() as { admin_keys: unknown[] }).admin_keys, [], 'no key was made');
  assert.deepEqual((await portal.get('/users')).json(), { users: [] }, 'no user was made');
  assert.ok(
    (await auditLog(portal)).every((row) => row.status === 400),
    'each refusal is audited as a 400, none as a 500',
  );
});

test('a duration written in more than 64 characters is a 400 on every database, not a 500 where PostgreSQL cannot keep it', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  // A minute and a day, each a valid ISO 8601 duration, with leading zeros.
  for (const duration of [`PT${'0'.repeat(100)}60S`, `P${'0'.repeat(100)}1D`]) {
    // A webhook's overlap is kept as the end it gives, not as written.
    for (const call of calls.filter((one) => one.parameter !== 'overlap')) {
      const what = `${call.path} ${call.parameter}=${duration}`;
      refusedAs400(await portal.post(call.path, { ...call.others, [call.parameter]: duration }), what);
    }
    assert.equal(
      refusedAs400(await portal.post('/create_admin_key', { name: 'zeros', expires_in: duration }), duration),
      'invalid value for "expires_in": a duration of at most 64 characters',
    );
  }
  assert.deepEqual((await portal.get('/admin_keys')).json(), { admin_keys: [] }, 'no key was made');
  assert.deepEqual((await portal.get('/users')).json(), { users: [] }, 'no user was made');
  const minute = await portal.post('/create_admin_key', { name: 'minute', expires_in: 'PT0060S' });
  assert.equal(minute.status, 200, minute.text);
});

test('create_admin_key says the bound: a lifetime of at most P100Y', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  for (const duration of TOO_LONG) {
    assert.equal(
      refusedAs400(await portal.post('/create_admin_key', { name: 'long', expires_in: duration }), duration),
      'invalid value for "expires_in": a duration of at most P100Y',
    );
  }
  const century = await portal.post('/create_admin_key', { name: 'century', expires_in: 'P100Y' });
  assert.equal(century.status, 200, century.text);
  assert.equal(
    (century.json() as { admin_key: { expires_at: string } }).admin_key.expires_at,
    '2126-03-02T09:00:00+00:00',
  );
});

test('a key that expires makes no key that would outlive it, however many digits the later year has', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  const key = await makeAdminKey(portal, 'month', { scope: 'admin', expiresIn: 'P30D' });
  for (const duration of ['P8000Y', 'P999999999Y', 'PT99999999999999999999S', 'P31D']) {
    const answer = await portal.post('/create_admin_key', { name: 'later', expires_in: duration }, bearer(key));
    assert.ok(answer.status === 400 || answer.status === 403, `${duration}: ${answer.text}`);
  }
  const keys = (await portal.get('/admin_keys')).json() as { admin_keys: { name: string }[] };
  assert.deepEqual(
    keys.admin_keys.map((listed) => listed.name),
    ['month'],
  );
});
