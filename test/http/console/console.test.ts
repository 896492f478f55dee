// The admin console's stories, walked in a real headless Chromium against a real portal:
// signing in with a key, a hostile user id shown as text, issuing a configuration and reading
// its QR code back, what a read-only key sees and may do, and keys that no longer hold; who had
// an address at a moment, and an admin key made and revoked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { revokeAdminKey } from '../../../src/core/access/index.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { insertDailyStatsIfMissing } from '../../../src/storage/statistics.js';
import { auditLog, bearer, makeAdminKey } from '../../support/admin-keys.js';
import { consoleUrl, launchBrowser, openTab, readQrCode, screenshot, signIn } from '../../support/console-browser.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const XSS = '<img src=x onerror=alert(1)>';

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser.close();
});

async function portalWithUsers(): Promise<TestPortal> {
  const portal = await startTestPortal();
  for (const userId of ['alice', 'bob', XSS]) {
    const created = await portal.post('/create', {
      user_id: userId,
      profile_id: 'employees',
      display_name: `${userId}'s laptop`,
    });
    assert.equal(created.status, 200, created.text);
  }
  return portal;
}

test('an administrator signs in with an admin key, walks the pages and finds a user by the start of their id', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'helpdesk', { scope: 'admin' });
  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());

  const signInPage = await page.goto(consoleUrl(portal));
  assert.equal(signInPage?.status(), 200, 'without a session the console leads to its sign-in page');
  assert.equal(page.url(), `${consoleUrl(portal)}sign-in`);
  const headers = signInPage?.headers() ?? {};
  assert.match(headers['content-security-policy'] ?? '', /script-src 'self'; style-src 'self'/);
  assert.match(headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
  await screenshot(page, 'sign-in');
  assert.deepEqual(problems, []);
  await signIn(page, portal, key);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Dashboard');
  assert.match((await page.locator('nav').textContent()) ?? '', /helpdesk · admin/);
  const cookies = await context.cookies();
  const session = cookies.find((cookie) => cookie.name === 'vpn_portal_console');
  assert.ok(session !== undefined, 'the session is a cookie');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
  assert.equal(session.path, '/vpn-user-portal/admin/');
  assert.match(
    (await page.locator('#nodes ~ .scroll, section[aria-labelledby="nodes"]').first().textContent()) ?? '',
    /down/,
    'the unreachable node shows as down',
  );
  assert.match(
    (await page.locator('section[aria-labelledby="pools"]').textContent()) ?? '',
    /3 of 253/,
    'three WireGuard addresses of the pool are used',
  );
  assert.match(
    (await page.locator('section[aria-labelledby="usage"]').textContent()) ?? '',
    /No data yet: no use recorded in the last 30 days/,
    'on day one the chart says why it is empty instead of drawing an empty axis',
  );
  assert.equal(await page.locator('canvas#usage-chart').count(), 0);
  // Two days ago: the start-up housekeeping wrote yesterday's row (nobody) already.
  const dayBeforeYesterday = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
  await insertDailyStatsIfMissing(portal.portal.ctx.db, [
    { date: dayBeforeYesterday, profileId: 'employees', maxConnectionCount: 2, uniqueUserCount: 3 },
  ]);
  await page.reload();
  // Chart.js has drawn once the canvas has its width (a locator: the policy forbids evaluated text).
  await page.locator('canvas#usage-chart[width]').waitFor();
  await screenshot(page, 'dashboard');

  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByLabel('User id starts with').fill('al');
  await page.getByRole('button', { name: 'Search' }).click();
  const found = await page.locator('main table tbody tr').allTextContents();
  assert.deepEqual(found, ['alice']);
  await page.getByRole('link', { name: 'alice' }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'User alice');
  assert.match((await page.locator('section[aria-labelledby="configurations"]').textContent()) ?? '', /alice's laptop/);
  await screenshot(page, 'user');

  for (const [link, heading, name] of [
    ['Online', 'Online now', 'online'],
    ['Connection log', 'Connection log', 'connection-log'],
    ['Enrollment tokens', 'Enrollment tokens', 'enrollment-tokens'],
    ['Audit log', 'Audit log', 'audit-log'],
    ['Webhooks', 'Webhooks', 'webhooks'],
  ] as const) {
    await page.getByRole('link', { name: link, exact: true }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), heading);
    await screenshot(page, name);
  }
  assert.match((await page.locator('main').textContent()) ?? '', /No deliveries\./);
  await page.getByRole('link', { name: 'Audit log', exact: true }).click();
  assert.match(
    (await page.locator('main table').textContent()) ?? '',
    /console\/sign_in/,
    'the sign-in is in the audit log',
  );
  assert.deepEqual(problems, [], 'no script error and no Content-Security-Policy violation');

  const phone = await openTab(browser, { phone: true });
  t.after(() => phone.context.close());
  await signIn(phone.page, portal, key);
  const overflow = Number(await phone.page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
  assert.ok(overflow <= 0, `the dashboard fits a phone's width (overflows by ${overflow}px)`);
  await screenshot(phone.page, 'dashboard-phone');
});

test('a user id made of HTML shows as text, in the list, on its page and in the confirmation', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());
  let alerted = false;
  page.on('dialog', async (dialog) => {
    alerted = true;
    await dialog.dismiss();
  });
  await signIn(page, portal, portal.secret);
  await page.goto(`${consoleUrl(portal)}users`);
  assert.equal(await page.locator('main img').count(), 0, 'no image element was made from the user id');
  await page.getByRole('link', { name: XSS }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), `User ${XSS}`);
  await page.getByRole('link', { name: 'Disable…' }).click();
  assert.match(
    (await page.locator('#what').textContent()) ?? '',
    /^Disable <img src=x onerror=alert\(1\)>: 1 configuration \(employees\)/,
  );
  assert.equal(await page.locator('main img').count(), 0);
  assert.equal(alerted, false, 'no script ran');
  assert.deepEqual(problems, []);
});

test('issuing a configuration shows its file once, as a download and as a QR code that reads back to the file; a token made for the user is revoked from its list', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'issuer', { scope: 'write' });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);
  await page.goto(`${consoleUrl(portal)}user?user_id=bob`);
  await page.getByLabel('Name').fill('phone');
  await page.getByRole('button', { name: 'Issue…' }).click();
  assert.match(
    (await page.locator('#what').textContent()) ?? '',
    /^Issue a configuration for bob in profile employees/,
  );
  await page.getByRole('button', { name: 'Yes, create' }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Configuration for bob');
  const fileText = (await page.locator('pre.config').textContent()) ?? '';
  assert.match(fileText, /^\[Interface\]\nPrivateKey = /);
  const download = page.waitForEvent('download');
  await page.getByRole('link', { name: /^Download / }).click();
  const file = await (await download).createReadStream();
  const chunks: Buffer[] = [];
  for await (const chunk of file) chunks.push(chunk as Buffer);
  assert.equal(Buffer.concat(chunks).toString('utf8'), fileText, 'the download is the file');
  const qr = readQrCode(await page.locator('img#qr').screenshot());
  assert.equal(qr, fileText, 'the QR code holds the file');
  await screenshot(page, 'configuration-issued');
  const privateKey = /PrivateKey = (\S+)/.exec(fileText)?.[1] ?? '';

  await page.goto(`${consoleUrl(portal)}user?user_id=bob`);
  assert.match((await page.locator('section[aria-labelledby="configurations"]').textContent()) ?? '', /phone/);
  assert.ok(!(await page.content()).includes(privateKey), "the user's page never shows the private key");
  const audit = await auditLog(portal);
  const create = audit.find((entry) => entry.call === 'create' && entry.userId === 'bob' && entry.keyName === 'issuer');
  assert.ok(create !== undefined, "the issue is audited under the key's name");
  assert.ok(!JSON.stringify(audit).includes(privateKey));

  await page.getByRole('button', { name: 'Make a token…' }).click();
  await page.getByRole('button', { name: 'Yes, enrollment token' }).click();
  const token = (await page.locator('#enrollment-token').textContent()) ?? '';
  assert.match(token, /^vpe_/);
  assert.equal(readQrCode(await page.locator('img#qr').screenshot()), token, "the token's QR code holds the token");

  await page.getByRole('link', { name: 'Enrollment tokens', exact: true }).click();
  await page.getByRole('link', { name: 'Revoke…' }).click();
  assert.match((await page.locator('#what').textContent()) ?? '', /^Revoke the enrollment token /);
  await page.getByRole('button', { name: 'Yes, revoke enrollment token' }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Enrollment tokens');
  assert.match((await page.locator('main table tbody tr', { hasText: 'bob' }).textContent()) ?? '', /revoked/);
  const tokens = (await portal.get('/enrollment_tokens', { user_id: 'bob' })).json() as {
    enrollment_tokens: { state: string }[];
  };
  assert.deepEqual(
    tokens.enrollment_tokens.map((listed) => listed.state),
    ['revoked'],
  );
});

test('a read-only key sees no change buttons, and a forged change is refused by the CSRF check and by its scope', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'viewer', { scope: 'read' });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);
  await page.goto(`${consoleUrl(portal)}user?user_id=alice`);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'User alice');
  assert.equal(await page.getByRole('link', { name: /Disable|Enable|Delete/ }).count(), 0, 'no change is offered');
  assert.equal(await page.getByRole('button', { name: /Issue|token/ }).count(), 0);
  assert.equal(await page.getByRole('link', { name: 'Audit log' }).count(), 0, 'the audit log needs scope admin');

  const forged = await page.request.post(`${consoleUrl(portal)}do`, {
    form: { action: 'disable_user', user_id: 'alice' },
  });
  assert.equal(forged.status(), 403);
  assert.match(await forged.text(), /CSRF token missing or wrong/);
  const csrf = await page.locator('input[name="csrf"]').first().getAttribute('value');
  const withToken = await page.request.post(`${consoleUrl(portal)}do`, {
    form: { action: 'disable_user', user_id: 'alice', csrf: csrf ?? '' },
  });
  assert.equal(withToken.status(), 403);
  assert.match(
    await withToken.text(),
    /key &#34;viewer&#34; has scope &#34;read&#34;; disable_user needs scope &#34;write&#34;/,
    'the page says which limit',
  );
  const crossSite = await page.request.post(`${consoleUrl(portal)}do`, {
    form: { action: 'disable_user', user_id: 'alice', csrf: csrf ?? '' },
    headers: { 'sec-fetch-site': 'cross-site' },
  });
  assert.equal(crossSite.status(), 403);
  const disabled = await portal.get('/disabled_users');
  assert.deepEqual(disabled.json(), { disabled_users: [] }, 'nothing changed');
  const refusal = (await auditLog(portal)).find((entry) => entry.call === 'disable_user');
  assert.equal(refusal?.status, 403);
  assert.equal(refusal?.keyName, 'viewer');
});

test('a link from elsewhere cannot make the console report a change that did not happen; the change’s own redirect can', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'helpdesk', { scope: 'write' });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);

  // A ticket links the administrator to a page that would say alice's account was removed.
  await page.goto(`${consoleUrl(portal)}users?done=deleted&user_id=alice`);
  assert.equal(await page.getByRole('status').count(), 0, 'no note without the change');
  await page.goto(`${consoleUrl(portal)}user?user_id=bob&done=disabled&note=AAAAAAAAAAAAAAAAAAAAAA`);
  assert.equal(await page.getByRole('status').count(), 0, 'a made-up seal is no seal');
  assert.match((await page.locator('main').textContent()) ?? '', /State: enabled/);

  await page.getByRole('link', { name: 'Disable…' }).click();
  await page.getByRole('button', { name: 'Yes, disable user' }).click();
  assert.equal(await page.getByRole('status').textContent(), 'bob was disabled.');
  const sealed = new URL(page.url());
  // The seal names this very note: moved to another user or change, it says nothing.
  sealed.searchParams.set('user_id', 'alice');
  await page.goto(sealed.href);
  assert.equal(await page.getByRole('status').count(), 0);
});

test('a key limited to one profile is told which limit stops it', async (t) => {
  const portal = await startTestPortal({
    config: {
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
          nodeUrl: 'http://127.0.0.1:2',
        },
        {
          profileId: 'guests',
          displayName: 'Guests',
          hostName: 'vpn.example.org',
          wRangeFour: '10.45.0.0/24',
          wRangeSix: 'fd45::/64',
          nodeUrl: 'http://127.0.0.1:2',
        },
      ],
    },
  });
  t.after(portal.close);
  await portal.post('/create', { user_id: 'carol', profile_id: 'employees' });
  await portal.post('/create', { user_id: 'carol', profile_id: 'guests' });
  const key = await makeAdminKey(portal, 'guest-desk', { scope: 'write', profiles: ['guests'] });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);
  await page.goto(`${consoleUrl(portal)}user?user_id=carol`);
  await page.getByRole('link', { name: 'Disable…' }).click();
  await page.getByRole('button', { name: 'Yes, disable user' }).click();
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /Not allowed \(403\):.*key "guest-desk" may not change user "carol" as a whole: the user has configurations in employees, outside its profiles \(guests\)/,
  );
});

test('a revoked key cannot sign in, and a session whose key is revoked goes back to the sign-in form', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'night-shift', { scope: 'write' });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Dashboard');

  await revokeAdminKey(portal.portal.ctx, 'night-shift');
  await page.goto(`${consoleUrl(portal)}users`);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /^Admin key "night-shift" was revoked at .*; your session ended\.$/,
  );

  await signIn(page, portal, key);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
  assert.match((await page.getByRole('alert').textContent()) ?? '', /^Admin key "night-shift" was revoked at /);
  await signIn(page, portal, 'not a key at all');
  assert.equal(await page.getByRole('alert').textContent(), 'This is neither an admin key nor the Admin API secret.');
  await screenshot(page, 'sign-in-refused');
  const refusals = (await auditLog(portal)).filter((entry) => entry.call === 'console/sign_in' && entry.status === 403);
  assert.ok(
    refusals.some((entry) => entry.keyName === 'night-shift' && /was revoked/.test(entry.detail ?? '')),
    'the revoked key is named in the audit log',
  );
  assert.ok(refusals.some((entry) => entry.keyName === null && entry.detail === 'wrong secret'));
  assert.ok(!JSON.stringify(await auditLog(portal)).includes(key), 'the key itself is never in the audit log');
});

/** The headers every console answer carries. */
function assertConsoleHeaders(headers: Headers, what: string): void {
  assert.match(headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, what);
  assert.equal(headers.get('x-frame-options'), 'DENY', what);
  assert.equal(headers.get('x-content-type-options'), 'nosniff', what);
  assert.equal(headers.get('cache-control'), 'no-store', what);
}

test('without a session a console page redirects to the sign-in page with 303, and a refused sign-in answers 403: never a 401 without WWW-Authenticate', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  for (const path of ['', 'users', 'user?user_id=alice']) {
    const answer = await fetch(`${consoleUrl(portal)}${path}`, { redirect: 'manual' });
    assert.equal(answer.status, 303, path);
    assert.equal(answer.headers.get('location'), `${new URL(consoleUrl(portal)).pathname}sign-in`, path);
    assertConsoleHeaders(answer.headers, path);
  }
  const form = await fetch(`${consoleUrl(portal)}do`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: 'csrf=x',
  });
  assert.equal(form.status, 303, 'a form sent after the session ended leads to the sign-in page too');
  const refused = await fetch(`${consoleUrl(portal)}sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: 'credential=not-a-key',
  });
  assert.equal(refused.status, 403);
  assert.match(await refused.text(), /<form method="post"/);
  assertConsoleHeaders(refused.headers, 'refused sign-in');
});

test('a console path with no page answers the console’s own 404 page with its headers; the Admin API keeps its JSON 404', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  for (const path of ['nope', 'users/alice/nope/deeper']) {
    const missing = await fetch(`${consoleUrl(portal)}${path}`, { redirect: 'manual' });
    assert.equal(missing.status, 404, path);
    assert.match(missing.headers.get('content-type') ?? '', /^text\/html/, path);
    assertConsoleHeaders(missing.headers, path);
    assert.match(await missing.text(), /<h1>Not found<\/h1>/, path);
  }
  const api = await portal.get('/nope');
  assert.equal(api.status, 404);
  assert.match(api.headers.get('content-type') ?? '', /^application\/json/);
});

test('the console is off with adminConsole.enabled false, and refuses addresses outside adminApi.allowList', async (t) => {
  const off = await startTestPortal({ config: { adminConsole: { enabled: false } } as never });
  t.after(off.close);
  assert.equal((await fetch(`${consoleUrl(off)}sign-in`)).status, 404);
  const elsewhere = await startTestPortal({
    config: { adminApi: { allowList: ['192.0.2.0/24'], trustedProxyList: [] } },
  });
  t.after(elsewhere.close);
  const refused = await fetch(`${consoleUrl(elsewhere)}sign-in`);
  assert.equal(refused.status, 403);
  assert.match(await refused.text(), /adminApi\.allowList/);
});

test('signing out from a tab left open since before the browser signed in again signs out, with no refusal', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { context, page: oldTab } = await openTab(browser);
  t.after(() => context.close());
  await signIn(oldTab, portal, portal.secret);
  assert.equal(await oldTab.getByRole('heading', { level: 1 }).textContent(), 'Dashboard');
  // In another tab the administrator signs out and in again: a new session, a new CSRF token.
  const newTab = await context.newPage();
  await newTab.goto(consoleUrl(portal));
  await newTab.getByRole('button', { name: 'Sign out' }).click();
  await newTab.waitForLoadState('load');
  await signIn(newTab, portal, portal.secret);
  assert.equal(await newTab.getByRole('heading', { level: 1 }).textContent(), 'Dashboard');

  // Back in the old tab, whose form still carries the first session's token.
  await oldTab.getByRole('button', { name: 'Sign out' }).click();
  await oldTab.waitForLoadState('load');
  assert.equal(oldTab.url(), `${consoleUrl(portal)}sign-in`, 'at the sign-in page');
  assert.doesNotMatch((await oldTab.content()) ?? '', /Not allowed|CSRF/);
  assert.deepEqual(
    (await context.cookies()).filter((cookie) => cookie.name === 'vpn_portal_console'),
    [],
    'the browser holds no session',
  );
  await newTab.reload();
  assert.equal(newTab.url(), `${consoleUrl(portal)}sign-in`, 'the other tab is signed out too');
  const refusals = (await auditLog(portal)).filter((entry) => entry.status === 403);
  assert.deepEqual(refusals, [], 'no refusal in the audit log');
});

test('behind a trusted TLS proxy the session cookie is a Secure __Host- cookie that a sibling domain cannot plant, and the sign-in is audited from the client’s address', async (t) => {
  const portal = await startTestPortal({
    config: { adminApi: { allowList: ['203.0.113.0/24'], trustedProxyList: ['127.0.0.1/32'] } },
  });
  t.after(portal.close);
  const forwarded = { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' };
  const signedIn = await fetch(`${consoleUrl(portal)}sign-in`, {
    method: 'POST',
    body: new URLSearchParams({ credential: portal.secret }),
    headers: forwarded,
    redirect: 'manual',
  });
  assert.equal(signedIn.status, 303);
  const setCookie = signedIn.headers.get('set-cookie') ?? '';
  assert.match(
    setCookie,
    /^__Host-vpn_portal_console=[^;]+; Path=\/; Expires=[^;]+; HttpOnly; Secure; SameSite=Strict$/,
  );
  const token = setCookie.slice(setCookie.indexOf('=') + 1, setCookie.indexOf(';'));
  const dashboard = (cookie: string) =>
    fetch(consoleUrl(portal), { headers: { ...forwarded, cookie }, redirect: 'manual' });
  const signedInPage = await dashboard(`__Host-vpn_portal_console=${token}`);
  assert.equal(signedInPage.status, 200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await signedInPage.text())?.[1] ?? '';
  // A sibling domain can set `vpn_portal_console` for the whole domain; over TLS it is not read.
  const planted = await dashboard(`vpn_portal_console=${token}`);
  assert.equal(planted.status, 303, 'a cookie without the prefix is no session over TLS');
  assert.equal(planted.headers.get('location'), `${new URL(consoleUrl(portal)).pathname}sign-in`);
  const signedOut = await fetch(`${consoleUrl(portal)}sign-out`, {
    method: 'POST',
    body: new URLSearchParams({ csrf }),
    headers: { ...forwarded, cookie: `__Host-vpn_portal_console=${token}` },
    redirect: 'manual',
  });
  assert.match(
    signedOut.headers.get('set-cookie') ?? '',
    /^__Host-vpn_portal_console=; Max-Age=0; Path=\/; Expires=[^;]+; Secure/,
  );
  const afterSignOut = await dashboard(`__Host-vpn_portal_console=${token}`);
  assert.match(await afterSignOut.text(), /Your session has ended; sign in again\./, 'signed out, the session is gone');
  const plain = await fetch(`${consoleUrl(portal)}sign-in`, {
    method: 'POST',
    body: new URLSearchParams({ credential: portal.secret }),
    headers: { 'x-forwarded-for': '203.0.113.7' },
    redirect: 'manual',
  });
  assert.doesNotMatch(plain.headers.get('set-cookie') ?? '', /Secure/, 'over plain HTTP the cookie cannot be Secure');
  const signIns = (await auditLog(portal)).filter((entry) => entry.call === 'console/sign_in');
  assert.deepEqual(
    signIns.map((entry) => [entry.keyName, entry.sourceAddress, entry.status]),
    [
      ['secret', '203.0.113.7', 200],
      ['secret', '203.0.113.7', 200],
    ],
  );
});

test('an administrator searches the connection log by a tunnel address and a moment and finds who had the address then', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const now = portal.portal.ctx.clock.now().getTime();
  const at = (hoursAgo: number) => new Date(now - hoursAgo * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  // 10.44.0.7 went from alice (5 to 3 hours ago) to bob (since 2 hours ago, still connected), as the nodes reported it.
  const db = portal.portal.ctx.db;
  const session = {
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    nodeNumber: asNodeNumber(0),
    ipFour: '10.44.0.7',
    ipSix: 'fd44::7',
  } as const;
  await openConnection(db, {
    ...session,
    userId: asUserId('alice'),
    connectionId: 'a1',
    originatingIp: '192.0.2.10',
    connectedAt: new Date(at(5)),
  });
  await closeConnection(db, {
    connectionId: 'a1',
    nodeNumber: session.nodeNumber,
    disconnectedAt: new Date(at(3)),
    bytesIn: 1,
    bytesOut: 2,
  });
  await openConnection(db, {
    ...session,
    userId: asUserId('bob'),
    connectionId: 'b1',
    originatingIp: '198.51.100.7',
    connectedAt: new Date(at(2)),
  });
  const key = await makeAdminKey(portal, 'cert-desk', { scope: 'read' });
  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);

  const search = async (address: string, moment: string): Promise<string[]> => {
    await page.getByRole('link', { name: 'Connection log', exact: true }).click();
    await page.getByLabel('Address (tunnel or client)').fill(address);
    await page.getByLabel('Open at', { exact: true }).fill(moment);
    await page.getByRole('button', { name: 'Search' }).click();
    return page.locator('main table tbody tr td:first-child').allTextContents();
  };
  assert.deepEqual(await search('10.44.0.7', at(4)), ['alice'], 'four hours ago alice had it');
  await screenshot(page, 'connection-log-who-had');
  assert.deepEqual(
    await search('fd44:0:0:0:0:0:0:7', at(1)),
    ['bob'],
    'an hour ago bob had it, found by the long form of its IPv6 address',
  );
  assert.deepEqual(await search('10.44.0.7', at(2.5)), [], 'between the two nobody had it');
  assert.match((await page.locator('main').textContent()) ?? '', /No sessions\./);
  assert.deepEqual(await search('198.51.100.7', at(1)), ['bob'], "the client's own address finds the session too");
  await search('10.44.0.300', at(1));
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /Not possible \(400\): invalid value for "ip": "10\.44\.0\.300" is not an IPv4 or IPv6 address/,
    'a wrong address says what an address looks like',
  );
  assert.deepEqual(
    problems,
    ['Failed to load resource: the server responded with a status of 400 (Bad Request)'],
    'the refused search answered its 400, and the page had no other problem',
  );
});

test('an administrator in Amsterdam types a time as her clock shows it, and the page says which UTC moment it searched; on a phone each label stays with its field', async (t) => {
  // The session below is on a fixed day (the text of a winter-time moment); with the default
  // retention (P1M) the day's housekeeping would delete it once the real date is a month past.
  const portal = await startTestPortal({ config: { connectionLogRetention: 'P100Y' } });
  t.after(portal.close);
  // bob held 10.44.0.9 from 06:00 to 07:00 UTC on 28 November, that is 07:00 to 08:00 in Amsterdam.
  await openConnection(portal.portal.ctx.db, {
    userId: asUserId('bob'),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    connectionId: 'b9',
    nodeNumber: asNodeNumber(0),
    ipFour: '10.44.0.9',
    ipSix: 'fd44::9',
    originatingIp: null,
    connectedAt: new Date('2026-11-28T06:00:00Z'),
  });
  await closeConnection(portal.portal.ctx.db, {
    connectionId: 'b9',
    nodeNumber: asNodeNumber(0),
    disconnectedAt: new Date('2026-11-28T07:00:00Z'),
    bytesIn: 1,
    bytesOut: 1,
  });
  const key = await makeAdminKey(portal, 'cert-desk', { scope: 'read' });
  const { context, page, problems } = await openTab(browser, { timezoneId: 'Europe/Amsterdam' });
  t.after(() => context.close());
  await signIn(page, portal, key);
  await page.getByRole('link', { name: 'Connection log', exact: true }).click();
  // The console's script names the browser's zone once the page has loaded (a locator waits
  // without evaluating a string, which the console's Content-Security-Policy forbids).
  await page.locator('[data-browser-zone-name]', { hasText: 'Europe/Amsterdam' }).first().waitFor();
  assert.match(
    (await page.locator('main .hint').first().textContent()) ?? '',
    /in your time zone \(Europe\/Amsterdam\)/,
    'the page names the zone a typed time is read in',
  );
  await page.getByLabel('Address (tunnel or client)').fill('10.44.0.9');
  await page.getByLabel('Open at', { exact: true }).fill('2026-11-28 07:30');
  await page.getByRole('button', { name: 'Search' }).click();
  assert.deepEqual(await page.locator('main table tbody tr td:first-child').allTextContents(), ['bob']);
  assert.equal(
    await page.getByRole('status').textContent(),
    'Searched in UTC: open at 2026-11-28 07:30 (Europe/Amsterdam) = 2026-11-28T06:30:00Z.',
  );
  assert.equal(
    await page.getByLabel('Open at', { exact: true }).inputValue(),
    '2026-11-28 07:30',
    'the field keeps what was typed',
  );
  // 08:30 in Amsterdam is 07:30 UTC: bob was gone.
  await page.getByLabel('Open at', { exact: true }).fill('2026-11-28 08:30');
  await page.getByRole('button', { name: 'Search' }).click();
  assert.match((await page.locator('main').textContent()) ?? '', /No sessions\./);
  assert.deepEqual(problems, []);

  const phone = await openTab(browser, { phone: true, timezoneId: 'Europe/Amsterdam' });
  t.after(() => phone.context.close());
  await signIn(phone.page, portal, key);
  await phone.page.goto(`${consoleUrl(portal)}log`);
  for (const label of ['Address (tunnel or client)', 'Open at', 'User', 'Started before']) {
    const labelBox = await phone.page.locator('form.filters label', { hasText: label }).first().boundingBox();
    const fieldBox = await phone.page.getByLabel(label, { exact: true }).boundingBox();
    assert.ok(labelBox !== null && fieldBox !== null, label);
    const gap = fieldBox.y - (labelBox.y + labelBox.height);
    assert.ok(
      gap >= 0 && gap < 12 && Math.abs(fieldBox.x - labelBox.x) < 2,
      `"${label}" sits right above its field (gap ${gap}px)`,
    );
  }
  const overflow = Number(await phone.page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
  assert.ok(overflow <= 0, `the connection log fits a phone's width (overflows by ${overflow}px)`);
  await screenshot(phone.page, 'connection-log-phone');
});

test('an administrator makes an admin key, sees it once, and revokes it; each after a confirmation and audited', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'root-desk', { scope: 'admin' });
  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);
  await page.getByRole('link', { name: 'Admin keys', exact: true }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Admin keys');
  assert.match((await page.locator('main table').textContent()) ?? '', /root-desk/);

  await page.getByLabel('Name').fill('night-desk');
  await page.getByLabel('Scope').selectOption('write');
  await page.getByLabel(/^Expires after/).fill('P30D');
  await page.getByRole('button', { name: 'Make a key…' }).click();
  assert.match(
    (await page.locator('#what').textContent()) ?? '',
    /^Make the admin key "night-desk" with scope write, for every profile, expiring after P30D/,
  );
  assert.equal((await portal.admin.adminKeys()).length, 1, 'nothing is made before the confirmation');
  await page.getByRole('button', { name: 'Yes, create admin key' }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Admin key night-desk');
  const secret = (await page.locator('#admin-key-secret').textContent()) ?? '';
  assert.match(secret, /^vpa_/);
  await screenshot(page, 'admin-key-made');
  assert.equal((await portal.get('/users', {}, bearer(secret))).status, 200, 'the new key works at once');

  await page.getByRole('link', { name: 'Back to the admin keys' }).click();
  assert.ok(!(await page.content()).includes(secret), 'the list never shows a key');
  const row = page.locator('main table tbody tr', { hasText: 'night-desk' });
  assert.match((await row.textContent()) ?? '', /write.*active/);
  await page.getByRole('link', { name: 'Revoke night-desk…' }).click();
  assert.match(
    (await page.locator('#what').textContent()) ?? '',
    /^Revoke the admin key "night-desk": 1 key of that name stop/,
  );
  assert.equal(
    (await portal.get('/users', {}, bearer(secret))).status,
    200,
    'nothing is revoked before the confirmation',
  );
  await page.getByRole('button', { name: 'Yes, revoke admin key' }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Admin keys');
  assert.match((await page.locator('main table tbody tr', { hasText: 'night-desk' }).textContent()) ?? '', /revoked/);
  assert.equal(
    await page.getByRole('link', { name: 'Revoke night-desk…' }).count(),
    0,
    'a revoked key offers no revoke',
  );
  assert.equal((await portal.get('/users', {}, bearer(secret))).status, 401, 'the revoked key no longer works');

  const audit = await auditLog(portal);
  assert.deepEqual(
    audit
      .filter((entry) => entry.call.endsWith('_admin_key'))
      .map((entry) => [entry.call, entry.keyName, entry.status]),
    [
      ['revoke_admin_key', 'root-desk', 200],
      ['create_admin_key', 'root-desk', 200],
    ],
  );
  assert.ok(!JSON.stringify(audit).includes(secret), 'the new key is never in the audit log');
  assert.deepEqual(problems, []);
});

test('a key of scope write is offered no admin keys page, and the page says which limit stops it', async (t) => {
  const portal = await portalWithUsers();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'helpdesk', { scope: 'write' });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);
  assert.equal(await page.getByRole('link', { name: 'Admin keys' }).count(), 0);
  const keys = await page.goto(`${consoleUrl(portal)}keys`);
  assert.equal(keys?.status(), 403);
  assert.match(
    (await page.getByRole('alert').first().textContent()) ?? '',
    /Not allowed \(403\):.*admin_keys needs scope "admin"/,
  );
});
