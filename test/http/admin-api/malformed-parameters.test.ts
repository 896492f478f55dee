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
