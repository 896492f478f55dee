// Every parameter of every Admin API call, sent malformed: the answer is the reference's JSON
// error (`{"error": "…"}`, a 400) or the call's own answer for a value it takes, never a 500.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN_API_CALLS } from '../../../src/protocol/admin-api.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

/** Values of wrong forms: out-of-range numbers and dates, words, empty, control characters. */
const MALFORMED = ['', '2026-13-01', '-1', 'a\nb'];

test('a malformed value of any parameter of any call is answered with a JSON error naming it, never a 500', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const failures: string[] = [];
  for (const call of Object.values(ADMIN_API_CALLS)) {
    for (const name of Object.keys(call.params.shape)) {
      for (const value of MALFORMED) {
        const answer =
          call.method === 'GET'
            ? await portal.get(call.path, { [name]: value })
            : await portal.post(call.path, { [name]: value });
        if (answer.status >= 500)
          failures.push(`${call.path} ${name}=${JSON.stringify(value)}: ${answer.status} ${answer.text}`);
        // The reference's error shape, `{"error": "…"}`: errorBody throws on any other.
        else if (answer.status >= 400) errorBody(answer.text);
      }
    }
  }
  assert.deepEqual(failures, []);
});

test('stats answers a day that does not exist with the form it expects', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  for (const [name, value] of [
    ['since', '2026-13-01'],
    ['until', 'yesterday'],
    ['since', '2026-02-30'],
  ] as const) {
    const answer = await portal.get('/stats', { [name]: value });
    assert.equal(answer.status, 400, answer.text);
    assert.equal(errorBody(answer.text), `invalid value for "${name}": "${value}" is not a date such as 2026-03-01`);
  }
  assert.equal((await portal.get('/stats', { since: '2026-02-28', until: '2026-03-01' })).status, 200);
});

test('a value whose percent-encoding is no UTF-8 is answered invalid value, as the reference answers text that is not UTF-8, and makes nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const form = { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${portal.secret}` };

  // `j%F6rg`: jörg in Latin-1; `%ED%A0%80`: half a surrogate pair. Both were kept as sent, as a user id.
  for (const userId of ['j%F6rg', '%ED%A0%80']) {
    const created = await portal.request('/create', {
      method: 'POST',
      body: `user_id=${userId}&profile_id=employees`,
      headers: form,
    });
    assert.equal(created.status, 400, created.text);
    assert.equal(errorBody(created.text), 'invalid value for "user_id"');
    const listed = await portal.request(`/user_configuration_list?user_id=${userId}`, { headers: form });
    assert.equal(listed.status, 400, listed.text);
    assert.equal(errorBody(listed.text), 'invalid value for "user_id"');
  }
  const named = await portal.request('/create', {
    method: 'POST',
    body: 'user_id=alice&profile_id=employees&display_name=Caf%E9',
    headers: form,
  });
  assert.equal(errorBody(named.text), 'invalid value for "display_name"');
  // The same in raw bytes, not percent-encoded: 0xF6 is no UTF-8.
  const raw = await portal.request('/create', {
    method: 'POST',
    body: Buffer.concat([Buffer.from('user_id=j'), Buffer.from([0xf6]), Buffer.from('rg&profile_id=employees')]),
    headers: form,
  });
  assert.equal(raw.status, 400, raw.text);
  assert.equal(errorBody(raw.text), 'invalid value for "user_id"');
  assert.deepEqual((await portal.get('/users')).json(), { users: [] }, 'no user was made');

  // UTF-8 and a `%` written as `%25` are text as before.
  const jorg = await portal.request('/create', {
    method: 'POST',
    body: 'user_id=j%C3%B6rg+%25F6&profile_id=employees',
    headers: form,
  });
  assert.equal(jorg.status, 200, jorg.text);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['jörg %F6'] });
});
