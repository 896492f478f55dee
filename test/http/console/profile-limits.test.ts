// A console session limited to some profiles sees no more than its key sees through the Admin
// API: on the dashboard, only the nodes of its own profiles, by number, never another profile's
// node or any node's address; and no read the console knows the key may not make (the audit log
// of every profile), which would stand in the audit log as a refusal of the key; nor a link in
// the navigation to a page whose read it may not make.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { auditLog, employeesProfile, makeAdminKey } from '../../support/admin-keys.js';
import { consoleUrl, launchBrowser, openTab, signIn } from '../../support/console-browser.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** Nobody listens at either node; each is the node of one profile only. */
const EMPLOYEES_NODE = 'http://127.0.0.1:2';
const GUESTS_NODE = 'http://127.0.0.1:3';

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser.close();
});

/** `employees` on node 0 and `guests` on node 1. */
function portalWithTwoNodes(): Promise<TestPortal> {
  return startTestPortal({
    config: {
      ProfileList: [
        { ...employeesProfile, onNode: 0, nodeUrl: EMPLOYEES_NODE },
        {
          profileId: 'guests',
          displayName: 'Guests',
          hostName: 'vpn.example.org',
          wRangeFour: '10.45.0.0/24',
          wRangeSix: 'fd45::/64',
          onNode: 1,
          nodeUrl: GUESTS_NODE,
        },
      ],
    },
  });
}

test('a desk limited to guests sees only the guests node on the dashboard, and no node address', async (t) => {
  const portal = await portalWithTwoNodes();
  t.after(portal.close);
  const everyProfile = await makeAdminKey(portal, 'helpdesk', { scope: 'read' });
  const guestsOnly = await makeAdminKey(portal, 'guest-desk', { scope: 'read', profiles: ['guests'] });

  const full = await openTab(browser);
  t.after(() => full.context.close());
  await signIn(full.page, portal, everyProfile);
  const fullRows = await full.page
    .locator('section[aria-labelledby="nodes"] tbody tr td:first-child')
    .allTextContents();
  assert.deepEqual(
    fullRows,
    [`0 (${EMPLOYEES_NODE})`, `1 (${GUESTS_NODE})`],
    'a key for every profile sees both nodes',
  );

  const limited = await openTab(browser);
  t.after(() => limited.context.close());
  await signIn(limited.page, portal, guestsOnly);
  assert.equal(await limited.page.getByRole('heading', { level: 1 }).textContent(), 'Dashboard');
  const nodes = limited.page.locator('section[aria-labelledby="nodes"]');
  assert.deepEqual(
    await nodes.locator('tbody tr td:first-child').allTextContents(),
    ['1'],
    'the guests desk sees the node of guests, by number only',
  );
  const text = (await nodes.textContent()) ?? '';
  assert.doesNotMatch(text, /Node 0/, 'nor an alert about the employees node');
  assert.doesNotMatch(text, /127\.0\.0\.1/, 'nor the address of any node');
});

test('an admin desk limited to one profile opens the dashboard without a refused audit log read the console made for it', async (t) => {
  const portal = await portalWithTwoNodes();
  t.after(portal.close);
  const guestsAdmin = await makeAdminKey(portal, 'guest-admin', { scope: 'admin', profiles: ['guests'] });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, guestsAdmin);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Dashboard');
  const refused = (await auditLog(portal)).filter((entry) => entry.call === 'audit_log');
  assert.deepEqual(
    refused.map((entry) => [entry.keyName, entry.status, entry.detail]),
    [],
    'opening the dashboard is no refused call of the key',
  );
  const configurations = page.locator('section[aria-labelledby="configs"]');
  assert.match(
    (await configurations.textContent()) ?? '',
    /come from the audit log, which needs scope admin for every profile/,
  );
  assert.equal(await configurations.getByRole('alert').count(), 0, 'no refusal shown in its place');
});

test('the navigation links only the pages a session may open: no audit log or webhooks for a desk limited to a profile or without scope admin', async (t) => {
  const portal = await portalWithTwoNodes();
  t.after(portal.close);
  const sections = async (key: string): Promise<string[]> => {
    const { context, page } = await openTab(browser);
    t.after(() => context.close());
    await signIn(page, portal, key);
    return page.getByRole('navigation', { name: 'Sections' }).getByRole('link').allTextContents();
  };
  const reads = ['Dashboard', 'Users', 'Devices', 'Online', 'Connection log', 'Abuse lookup', 'Enrollment tokens'];

  assert.deepEqual(
    await sections(await makeAdminKey(portal, 'admin', { scope: 'admin' })),
    [...reads, 'Audit log', 'Webhooks', 'Admin keys'],
    'an admin key for every profile may open every page',
  );
  const guestsAdmin = await makeAdminKey(portal, 'guest-admin', { scope: 'admin', profiles: ['guests'] });
  assert.deepEqual(
    await sections(guestsAdmin),
    [...reads, 'Admin keys'],
    'the audit log and the webhooks need a key for every profile; the admin keys of its profiles it may see',
  );
  assert.deepEqual(
    await sections(await makeAdminKey(portal, 'helpdesk', { scope: 'write' })),
    reads,
    'scope write opens no page that needs scope admin',
  );
  assert.deepEqual(
    (await auditLog(portal)).filter((entry) => entry.status === 403).map((entry) => [entry.keyName, entry.call]),
    [],
    'no page the sessions opened made a call that was refused',
  );
});

test('a page opened directly whose read the session may not make answers 403 with the reason, not 200, and its filters stay', async (t) => {
  const portal = await portalWithTwoNodes();
  t.after(portal.close);
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, await makeAdminKey(portal, 'guest-admin', { scope: 'admin', profiles: ['guests'] }));
  const base = consoleUrl(portal);

  const audit = await page.goto(`${base}audit?user_id=alice`);
  assert.equal(audit?.status(), 403, 'the audit log needs a key for every profile');
  assert.match((await page.getByRole('alert').first().textContent()) ?? '', /Not allowed \(403\):.*guest-admin/);
  assert.equal(await page.getByLabel('User').inputValue(), 'alice', 'the search form stands, as typed');

  const webhooks = await page.goto(`${base}webhooks`);
  assert.equal(webhooks?.status(), 403);
  assert.match((await page.getByRole('alert').first().textContent()) ?? '', /Not allowed \(403\)/);

  const users = await page.goto(`${base}users`);
  assert.equal(users?.status(), 200, 'a page the session may read still answers 200');
  const badCursor = await page.goto(`${base}users?after=%21%21`);
  assert.equal(badCursor?.status(), 400, 'a search the API refuses as malformed answers its 400');
});
