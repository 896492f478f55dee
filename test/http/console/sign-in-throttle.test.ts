// Failed console sign-ins are throttled per client address: after 10 refused credentials from
// one address (an IPv6 client: its /64), as the portal derives it (X-Forwarded-For from a trusted
// proxy), every sign-in from it answers 429 with Retry-After and the sign-in page, the right
// key too, until its window has passed; sign-ins sent all at once are counted before any is
// checked; each refused sign-in is in the audit log; a sign-in that succeeds does not count, and other addresses sign in as before. The window passing and the bound on memory are shown on the
// throttle itself, with a clock the test moves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SIGN_IN_THROTTLE, SignInThrottle } from '../../../src/http/console/sign-in-throttle.js';
import type { MonotonicMs } from '../../../src/shared/monotonic.js';
import { auditLog } from '../../support/admin-keys.js';
import { consoleUrl } from '../../support/console-browser.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** Sends the sign-in form from `client` (through the trusted proxy's X-Forwarded-For). */
async function signInFrom(portal: TestPortal, client: string, credential: string) {
  const answer = await fetch(`${consoleUrl(portal)}sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'sec-fetch-site': 'same-origin',
      'x-forwarded-for': client,
    },
    body: new URLSearchParams({ credential }).toString(),
  });
  return { status: answer.status, headers: answer.headers, text: await answer.text() };
}

test('after 10 failed console sign-ins from one address every sign-in from it answers 429 with Retry-After and the sign-in page, the right key too; successes do not count and other addresses sign in', async (t) => {
  const portal = await startTestPortal({
    config: { adminApi: { allowList: ['0.0.0.0/0', '::/0'], trustedProxyList: ['127.0.0.1/32', '::1/128'] } },
  });
  t.after(portal.close);
  const wrong = 'vpa_not-a-key';

  for (let attempt = 1; attempt <= 9; attempt++)
    assert.equal((await signInFrom(portal, '192.0.2.7', wrong)).status, 403, `failure ${attempt}`);
  // A success neither counts as a failure nor forgives the ones before it.
  for (let attempt = 1; attempt <= 3; attempt++)
    assert.equal((await signInFrom(portal, '192.0.2.7', portal.secret)).status, 303, `success ${attempt}`);
  assert.equal((await signInFrom(portal, '192.0.2.7', wrong)).status, 403, 'failure 10');

  const refused = await signInFrom(portal, '192.0.2.7', portal.secret);
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.headers.get('set-cookie'), null, 'no session');
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter > 14 * 60 && retryAfter <= 15 * 60, `Retry-After ${retryAfter}`);
  assert.match(refused.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(refused.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.match(refused.text, /<form method="post" action="[^"]*\/admin\/sign-in" class="sign-in">/);
  assert.match(
    refused.text,
    /<p class="problem" role="alert" id="why">Too many failed sign-ins from your address; try again in 15 minutes\.<\/p>/,
  );
  assert.equal((await signInFrom(portal, '192.0.2.7', wrong)).status, 429);
  // Each refusal is in the audit log, as not checked: the two 429s in one row (two, should a
  // minute have turned between them), counted.
  const throttled = (await auditLog(portal)).filter(
    (entry) => entry.call === 'console/sign_in' && entry.status === 429,
  );
  assert.equal(
    throttled.reduce((sum, entry) => sum + 1 + entry.repeated, 0),
    2,
    JSON.stringify(throttled),
  );
  for (const entry of throttled)
    assert.deepEqual(
      [entry.sourceAddress, entry.keyName, entry.detail],
      ['192.0.2.7', null, 'too many failed sign-ins from this address: not checked'],
    );

  // Sign-ins sent all at once are counted before any is checked: no more than 10 are.
  const atOnce = await Promise.all(
    Array.from({ length: 30 }, () => signInFrom(portal, '198.51.100.9', wrong).then((answer) => answer.status)),
  );
  assert.deepEqual(
    [atOnce.filter((status) => status === 403).length, atOnce.filter((status) => status === 429).length],
    [10, 20],
  );

  // Another address is not held up.
  assert.equal((await signInFrom(portal, '192.0.2.8', portal.secret)).status, 303);

  // An IPv6 client counts by its /64: another address of it is refused, another /64 is not.
  for (let attempt = 1; attempt <= 10; attempt++)
    assert.equal((await signInFrom(portal, '2001:db8:0:1::1', wrong)).status, 403, `IPv6 failure ${attempt}`);
  assert.equal((await signInFrom(portal, '2001:db8:0:1::ffff', portal.secret)).status, 429);
  assert.equal((await signInFrom(portal, '2001:db8:0:2::1', portal.secret)).status, 303);
});

test('the sign-in throttle lets an address try again once its window has passed, counts an IPv4-mapped address as its IPv4 address, and keeps at most its cap of addresses, dropping the oldest', () => {
  let now = 1000;
  const throttle = new SignInThrottle({
    ...SIGN_IN_THROTTLE,
    maxFailures: 3,
    maxClients: 2,
    now: () => now as MonotonicMs,
  });
  assert.equal(throttle.attempt('192.0.2.7'), null);
  now += 60_000;
  assert.equal(throttle.attempt('::ffff:192.0.2.7'), null);
  assert.equal(throttle.attempt('192.0.2.7'), null);
  assert.equal(throttle.exhausted('192.0.2.7'), true, 'three failures reach the limit');
  assert.equal(throttle.attempt('::ffff:192.0.2.7'), 14 * 60);
  now += 14 * 60_000 - 1;
  assert.equal(throttle.attempt('192.0.2.7'), 1);
  now += 1;
  assert.equal(throttle.attempt('192.0.2.7'), null, 'the window has passed');
  throttle.succeeded('192.0.2.7');
  assert.equal(throttle.size, 0, 'and a success leaves nothing to keep');

  for (let attempt = 0; attempt < 3; attempt++) throttle.attempt('192.0.2.1');
  throttle.attempt('192.0.2.2');
  throttle.attempt('192.0.2.3');
  assert.equal(throttle.size, 2);
  assert.equal(throttle.attempt('192.0.2.1'), null, 'the oldest address was dropped for the newest');
});
