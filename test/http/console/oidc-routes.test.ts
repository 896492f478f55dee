// Single sign-on to the admin console through a real OpenID provider (oidc-provider in this
// process), as an administrator does it: in headless Chromium, "Sign in with Test SSO", the
// provider's own login and consent pages, back to the console's dashboard as `oidc:alice`, whose
// change is audited under that name; an account whose claims grant no scope back at the sign-in
// page with one line why and an audit row; with signOutAtProvider, Sign out ends her session at
// the provider too, so the next sign-on asks for the login again. Without a browser: a profiles mapping limits the
// session (kept on its row, read back on the next request), and a provider that is down makes
// the sign-in page say so.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { Logger } from 'pino';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { auditLog, makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { capturedLog } from '../../support/captured-log.js';
import { launchBrowser, openTab, screenshot } from '../../support/console-browser.js';
import { freePort } from '../../support/free-port.js';
import { signInAtProvider, startOidcProvider, type TestOidcProvider } from '../../support/oidc-provider.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** A pairwise subject as SATOSA gives one (64 hex digits) and then some: the longest a provider may send. */
const LONG_SUBJECT = `${'a1'.repeat(32)}${'-'.repeat(191)}`;

const accounts = {
  alice: { name: 'Alice', roles: ['vpn-operator'], groups: ['vpn-employees'] },
  bob: { name: 'Bob', roles: ['staff-only'] },
  [LONG_SUBJECT]: { name: 'Pairwise', roles: ['vpn-viewer'] },
  erin: { name: 'Erin', roles: ['vpn-admin'], groups: ['vpn-employees'] },
};

interface Stand {
  readonly portal: TestPortal;
  readonly provider: TestOidcProvider;
  /** `http://127.0.0.1:PORT/vpn-user-portal/admin/` */
  readonly console: string;
}

async function startStand(
  t: TestContext,
  oidc: Partial<NonNullable<NonNullable<PortalConfigFile['adminConsole']>['oidc']>> = {},
  config: Partial<PortalConfigFile> = {},
  logger?: Logger,
): Promise<Stand> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}/vpn-user-portal/`;
  const provider = await startOidcProvider({
    redirectUri: `${baseUrl}admin/oidc/callback`,
    postLogoutRedirectUri: `${baseUrl}admin/sign-in`,
    accounts,
  });
  // Closed even when the portal refuses to start, so that no server keeps the test alive.
  t.after(() => provider.close());
  const dir = mkdtempSync(path.join(tmpdir(), 'console-oidc-stand-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const secretFile = path.join(dir, 'oidc-client-secret');
  writeFileSync(secretFile, provider.clientSecret, { mode: 0o600 });
  chmodSync(secretFile, 0o600);
  const portal = await startTestPortal({
    ...(logger === undefined ? {} : { logger }),
    config: {
      ...config,
      baseUrl,
      listen: { host: '127.0.0.1', port },
      adminConsole: {
        oidc: {
          issuer: provider.issuer,
          name: 'Test SSO',
          clientId: provider.clientId,
          clientSecretFile: secretFile,
          requestScopes: ['profile', 'roles', 'groups'],
          scope: { claim: 'roles', read: ['vpn-viewer'], write: ['vpn-operator'], admin: ['vpn-admin'] },
          ...oidc,
        },
      },
    },
  });
  t.after(() => portal.close());
  return { portal, provider, console: `${baseUrl}admin/` };
}

async function launch(t: TestContext): Promise<Browser> {
  const browser = await launchBrowser();
  t.after(() => browser.close());
  return browser;
}

/**
 * Signs in as alice through the provider's own pages (its login form, then its consent), to the
 * dashboard; `screenshotAs` names a screenshot of the console's sign-in page on the way.
 */
async function signInAsAlice(page: Page, consoleUrl: string, screenshotAs?: string): Promise<void> {
  await page.goto(consoleUrl);
  if (screenshotAs !== undefined) await screenshot(page, screenshotAs);
  await page.getByRole('link', { name: 'Sign in with Test SSO' }).click();
  await page.locator('input[name="login"]').fill('alice');
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.locator('button[type="submit"]', { hasText: 'Continue' }).click();
  await page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
}

test('an administrator signs in through the OpenID provider in a real browser, sees the dashboard as oidc:alice, and her change is audited so', async (t) => {
  const { portal, console: consoleUrl } = await startStand(t);
  const created = await portal.post('/create', { user_id: 'dave', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const { page } = await openTab(await launch(t));

  await signInAsAlice(page, consoleUrl, 'sign-in-with-oidc');
  assert.equal(new URL(page.url()).pathname, '/vpn-user-portal/admin/');
  assert.equal((await page.locator('.who').textContent())?.trim(), 'oidc:alice · write');
  const cookies = await page.context().cookies();
  const session = cookies.find((cookie) => cookie.name === 'vpn_portal_console');
  assert.equal(session?.httpOnly, true);
  assert.equal(session?.sameSite, 'Strict');
  assert.equal(
    cookies.find((cookie) => cookie.name === 'vpn_portal_console_oidc'),
    undefined,
    "the flow's cookie is gone once used",
  );

  await page.goto(`${consoleUrl}confirm?action=disable_user&user_id=dave`);
  await page.getByRole('button', { name: 'Yes, disable user' }).click();
  await page.waitForLoadState();
  await page
    .getByText('dave was disabled.')
    .waitFor({ timeout: 5_000 })
    .catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await page.content()}`);
    });
  assert.deepEqual(await portal.admin.disabledUsers(), ['dave']);

  const rows = await auditLog(portal);
  const signIn = rows.find((row) => row.call === 'console/sign_in');
  assert.equal(signIn?.keyName, 'oidc:alice');
  assert.equal(signIn?.status, 200);
  const disable = rows.find((row) => row.call === 'disable_user');
  assert.equal(disable?.keyName, 'oidc:alice');
  assert.equal(disable?.userId, 'dave');
});

test('with signOutAtProvider, Sign out ends the session at the provider too, so the next single sign-on asks for the login again; without it the provider signs her straight back in', async (t) => {
  const browser = await launch(t);
  const ending = await startStand(t, { signOutAtProvider: true });
  const { page } = await openTab(browser);
  await signInAsAlice(page, ending.console);

  await page.getByRole('button', { name: 'Sign out' }).click();
  // The provider asks her to confirm (the portal has no ID token to hint with), then sends her back.
  await page.waitForURL((url) => url.href.startsWith(`${ending.provider.issuer}/session/end`));
  await page.getByRole('button', { name: /sign me out/i }).click();
  await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
  assert.equal(page.url(), `${ending.console}sign-in`);
  await page.getByRole('link', { name: 'Sign in with Test SSO' }).click();
  await page.locator('input[name="login"]').waitFor();
  assert.ok(page.url().startsWith(ending.provider.issuer), `the provider asks for the login again: ${page.url()}`);
  await screenshot(page, 'oidc-signed-out-at-provider');

  const keeping = await startStand(t);
  const second = await openTab(browser);
  await signInAsAlice(second.page, keeping.console);
  await second.page.getByRole('button', { name: 'Sign out' }).click();
  await second.page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
  assert.equal(second.page.url(), `${keeping.console}sign-in`, 'straight to the sign-in page');
  await second.page.getByRole('link', { name: 'Sign in with Test SSO' }).click();
  await second.page.getByRole('heading', { level: 1, name: 'Dashboard' }).waitFor();
  assert.equal((await second.page.locator('.who').textContent())?.trim(), 'oidc:alice · write');
});
test('an account whose claims grant no console scope is back at the sign-in page with one line why, and an audit row', async (t) => {
  const { portal, console: consoleUrl } = await startStand(t);
  const { page } = await openTab(await launch(t));
  await page.goto(`${consoleUrl}sign-in`);
  await page.getByRole('link', { name: 'Sign in with Test SSO' }).click();
  await page.locator('input[name="login"]').fill('bob');
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.locator('button[type="submit"]', { hasText: 'Continue' }).click();

  const why = page.getByRole('alert');
  await why.waitFor();
  assert.equal(
    await why.textContent(),
    'Test SSO account "bob" may not use the console: no value of claim "roles" grants a console scope.',
  );
  await screenshot(page, 'sign-in-with-oidc-refused');
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
  assert.equal(
    (await page.context().cookies()).find((cookie) => cookie.name === 'vpn_portal_console'),
    undefined,
  );
  const refusal = (await auditLog(portal)).find((row) => row.call === 'console/sign_in');
  assert.equal(refusal?.keyName, 'oidc:bob');
  assert.equal(refusal?.status, 403);
  assert.match(refusal?.detail ?? '', /no value of claim "roles"/);
});

/** The flow as a browser without JavaScript runs it: start, the provider's forms, the callback; the session cookie. */
async function signInOverHttp(
  stand: Stand,
  login: string,
  { overTls = false } = {},
): Promise<{ status: number; cookie: string | null; text: string }> {
  // Over TLS (a trusted proxy says so) both cookies carry the `__Host-` prefix and its rules.
  const headers: Record<string, string> = overTls ? { 'x-forwarded-proto': 'https' } : {};
  const prefix = overTls ? '__Host-' : '';
  const start = await fetch(`${stand.console}oidc/start`, { redirect: 'manual', headers });
  assert.equal(start.status, 303);
  const flowCookie = start.headers.getSetCookie().find((line) => line.startsWith(`${prefix}vpn_portal_console_oidc=`));
  assert.match(
    flowCookie ?? '',
    overTls
      ? /; Path=\/; HttpOnly; Secure; SameSite=Lax/
      : /; Path=\/vpn-user-portal\/admin\/oidc\/callback; HttpOnly; SameSite=Lax/,
  );
  const callback = await signInAtProvider(
    new URL(start.headers.get('location') ?? ''),
    login,
    `${stand.console}oidc/callback`,
  );
  const answer = await fetch(callback, {
    redirect: 'manual',
    headers: { ...headers, cookie: (flowCookie ?? '').split(';')[0] ?? '' },
  });
  const session = answer.headers.getSetCookie().find((line) => line.startsWith(`${prefix}vpn_portal_console=`));
  return {
    status: answer.status,
    cookie: session === undefined ? null : (session.split(';')[0] ?? null),
    text: await answer.text(),
  };
}

test('a profiles mapping limits an OpenID session to the profiles its claim grants, on every request after sign-in', async (t) => {
  const stand = await startStand(t, { profiles: { claim: 'groups', values: { 'vpn-employees': ['employees'] } } });
  const signedIn = await signInOverHttp(stand, 'alice');
  assert.equal(signedIn.status, 200, signedIn.text);
  assert.match(signedIn.text, /<meta http-equiv="refresh" content="0; url=\/vpn-user-portal\/admin\/">/);
  assert.ok(signedIn.cookie !== null);
  const dashboard = await fetch(stand.console, { headers: { cookie: signedIn.cookie } });
  assert.equal(dashboard.status, 200);
  assert.match(await dashboard.text(), /<span class="who">oidc:alice · write · employees<\/span>/);
});

test('behind a trusted TLS proxy the sign-in flow and the session are __Host- cookies, and a flow cookie a sibling domain set is not read', async (t) => {
  const stand = await startStand(t, {}, { adminApi: { trustedProxyList: ['127.0.0.1/32'] } });
  const signedIn = await signInOverHttp(stand, 'alice', { overTls: true });
  assert.equal(signedIn.status, 200, signedIn.text);
  assert.match(signedIn.cookie ?? '', /^__Host-vpn_portal_console=/);
  const tls = { 'x-forwarded-proto': 'https' };
  const dashboard = await fetch(stand.console, { headers: { ...tls, cookie: signedIn.cookie ?? '' } });
  assert.equal(dashboard.status, 200);
  assert.match(await dashboard.text(), /<span class="who">oidc:alice · write<\/span>/);

  // The flow cookie without the prefix, as a sibling domain could set it: over TLS the callback does not read it.
  const start = await fetch(`${stand.console}oidc/start`, { redirect: 'manual', headers: tls });
  const flow =
    start.headers
      .getSetCookie()[0]
      ?.split(';')[0]
      ?.replace(/^__Host-/, '') ?? '';
  const callback = await signInAtProvider(
    new URL(start.headers.get('location') ?? ''),
    'alice',
    `${stand.console}oidc/callback`,
  );
  const answer = await fetch(callback, { redirect: 'manual', headers: { ...tls, cookie: flow } });
  assert.equal(answer.status, 403);
  assert.equal(answer.headers.getSetCookie().filter((line) => /^__Host-vpn_portal_console=[^;]/.test(line)).length, 0);
});

test('at trace level the OpenID callback is logged without its one-time code and state', async (t) => {
  const captured = capturedLog('trace');
  const stand = await startStand(t, {}, {}, captured.logger);
  const start = await fetch(`${stand.console}oidc/start`, { redirect: 'manual' });
  const flow = start.headers.getSetCookie()[0]?.split(';')[0] ?? '';
  const callback = await signInAtProvider(
    new URL(start.headers.get('location') ?? ''),
    'alice',
    `${stand.console}oidc/callback`,
  );
  const answer = await fetch(callback, { redirect: 'manual', headers: { cookie: flow } });
  assert.equal(answer.status, 200, 'the sign-in worked');
  const code = callback.searchParams.get('code') ?? '';
  const state = callback.searchParams.get('state') ?? '';
  assert.ok(code.length >= 20 && state.length >= 20);
  const log = captured.text();
  const logged = /"url":"(\/vpn-user-portal\/admin\/oidc\/callback\?[^"]*)"/.exec(log)?.[1] ?? '';
  assert.match(logged, /(^|[?&])code=\*\*\*(&|$)/, 'the callback is logged, its code masked');
  assert.match(logged, /(^|[?&])state=\*\*\*(&|$)/);
  assert.equal(log.includes(code), false, 'the one-time code is in the log');
  assert.equal(log.includes(state), false, 'the state is in the log');
});

test('a subject of 255 characters signs in and is audited under its whole name', async (t) => {
  const stand = await startStand(t);
  assert.equal(LONG_SUBJECT.length, 255);
  const signedIn = await signInOverHttp(stand, LONG_SUBJECT);
  assert.equal(signedIn.status, 200, signedIn.text);
  const dashboard = await fetch(stand.console, { headers: { cookie: signedIn.cookie ?? '' } });
  assert.match(await dashboard.text(), new RegExp(`<span class="who">oidc:${LONG_SUBJECT} · read</span>`));
  const row = (await auditLog(stand.portal)).find((entry) => entry.call === 'console/sign_in');
  assert.equal(row?.keyName, `oidc:${LONG_SUBJECT}`);
});

test('a callback without its flow cookie, and a provider that cannot be reached, each answer the sign-in page with one line', async (t) => {
  const stand = await startStand(t);
  const start = await fetch(`${stand.console}oidc/start`, { redirect: 'manual' });
  const callback = await signInAtProvider(
    new URL(start.headers.get('location') ?? ''),
    'alice',
    `${stand.console}oidc/callback`,
  );
  const stray = await fetch(callback, { redirect: 'manual' });
  assert.equal(stray.status, 403, 'a refusal, not a 401 (which would need WWW-Authenticate)');
  assert.match(await stray.text(), /The sign-in took too long or was started in another browser; start it again\./);

  // Nothing listens at this issuer: the portal started all the same, and the sign-in page says why.
  const down = await startStand(t, { issuer: `http://127.0.0.1:${await freePort()}` });
  const refused = await fetch(`${down.console}oidc/start`, { redirect: 'manual' });
  assert.equal(refused.status, 503);
  const page = await refused.text();
  assert.match(
    page,
    /<p class="problem" role="alert" id="why">Test SSO cannot be reached \(.+\); sign in with an admin key\.<\/p>/,
  );
  assert.match(page, /name="credential"/, 'the key sign-in form is still there');
});

/** Posts one console change as the session of `cookie`, with the CSRF token its pages carry. */
async function postChange(stand: Stand, cookie: string, form: Record<string, string>): Promise<Response> {
  const page = await (await fetch(`${stand.console}keys`, { headers: { cookie } })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
  return fetch(`${stand.console}do`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...form, csrf }).toString(),
    redirect: 'manual',
  });
}

test('an OpenID session limited to one profile makes no key beyond its claims and revokes no key that holds more', async (t) => {
  const stand = await startStand(
    t,
    { profiles: { claim: 'groups', values: { 'vpn-employees': ['employees'] } } },
    twoProfiles,
  );
  await makeAdminKey(stand.portal, 'root', { scope: 'admin' });
  const signedIn = await signInOverHttp(stand, 'erin');
  assert.equal(signedIn.status, 200, signedIn.text);
  const cookie = signedIn.cookie ?? '';
  const dashboard = await (await fetch(stand.console, { headers: { cookie } })).text();
  assert.match(dashboard, /<span class="who">oidc:erin · admin · employees<\/span>/);

  const refusals: [Record<string, string>, string][] = [
    [
      { action: 'create_admin_key', name: 'wide', scope: 'admin' },
      'oidc:erin may not make key &#34;wide&#34;: every profile is more than its own profiles (employees)',
    ],
    [
      { action: 'create_admin_key', name: 'guests-desk', scope: 'read', profiles: 'guests' },
      'oidc:erin may not make key &#34;guests-desk&#34;: profiles guests are outside its own (employees)',
    ],
    [
      { action: 'revoke_admin_key', name: 'root' },
      'oidc:erin may not revoke key &#34;root&#34;: every profile is more than its own profiles (employees)',
    ],
  ];
  for (const [form, message] of refusals) {
    const answer = await postChange(stand, cookie, form);
    const text = await answer.text();
    assert.equal(answer.status, 403, `${form['action']} ${form['name']}: ${text}`);
    assert.ok(text.includes(message), `${form['action']} ${form['name']} says why: ${text}`);
  }
  const keys = await stand.portal.admin.adminKeys();
  assert.deepEqual(
    keys.map((key) => [key.name, key.scope, key.profiles, key.revoked_at]),
    [['root', 'admin', null, null]],
    'nothing was made or revoked',
  );
  const audited = (await auditLog(stand.portal)).filter((row) => row.call.endsWith('_admin_key'));
  assert.deepEqual(audited.map((row) => [row.call, row.keyName, row.status]).sort(), [
    ['create_admin_key', 'oidc:erin', 403],
    ['create_admin_key', 'oidc:erin', 403],
    ['revoke_admin_key', 'oidc:erin', 403],
  ]);

  // Within its claims it makes keys as before.
  const within = await postChange(stand, cookie, {
    action: 'create_admin_key',
    name: 'employees-desk',
    scope: 'write',
    profiles: 'employees',
  });
  assert.equal(within.status, 200, await within.text());
  assert.deepEqual((await stand.portal.admin.adminKeys()).map((key) => key.name).sort(), ['employees-desk', 'root']);
});
