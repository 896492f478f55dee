// The console's story of a person the directory (SCIM) calls inactive, walked in a real headless
// Chromium: enable_user answers 409 for them, so the list of users marks them, their page offers
// no Enable and says why, and the confirmation reached by a bookmark refuses instead of offering
// the button; a user an administrator disabled is still offered Enable, and a person the
// directory calls active again is enabled by it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { makeAdminKey } from '../../support/admin-keys.js';
import { consoleUrl, launchBrowser, openTab, screenshot, signIn } from '../../support/console-browser.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser.close();
});

const person = (userName: string, active: boolean) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName,
  active,
});

test('a person the directory calls inactive is offered no Enable, and the page says why; one an administrator disabled is', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const created = await scim.send('POST', 'Users', person('mallory', true));
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const malloryId = String(created.body?.['id']);
  for (const userId of ['mallory', 'bob'])
    assert.equal((await portal.post('/create', { user_id: userId, profile_id: 'employees' })).status, 200);
  // Mallory leaves: the directory disables them. An administrator disables bob during an incident.
  const left = await scim.send('PATCH', `Users/${malloryId}`, patchOp({ op: 'replace', path: 'active', value: false }));
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal((await portal.post('/disable_user', { user_id: 'bob' })).status, 204);
  assert.deepEqual(await portal.admin.disabledUsers(), ['bob', 'mallory']);

  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, await makeAdminKey(portal, 'helpdesk', { scope: 'admin' }));
  // The list of disabled users tells the two apart.
  await page.goto(`${consoleUrl(portal)}users?disabled=yes`);
  assert.deepEqual(await page.locator('main tbody tr').allTextContents(), [
    'bob',
    'mallory inactive in the directory (SCIM)',
  ]);
  await page.goto(`${consoleUrl(portal)}user?user_id=mallory`);
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'User mallory');
  assert.match((await page.locator('main').textContent()) ?? '', /State: disabled/);
  assert.equal(await page.getByRole('link', { name: 'Enable…' }).count(), 0, 'no Enable that would answer 409');
  assert.equal(
    await page.locator('#directory-inactive').textContent(),
    'The directory (SCIM) calls this user inactive: the portal enables them only once the directory calls the person active again.',
  );
  assert.equal(await page.getByRole('link', { name: 'Delete user…' }).count(), 1, 'deleting stays possible');
  await screenshot(page, 'directory-inactive-user');
  assert.deepEqual(problems, [], 'no script error and no Content-Security-Policy violation');

  // A bookmarked confirmation refuses, with the same reason, and has no button to press.
  const confirm = await page.goto(
    `${consoleUrl(portal)}confirm?${new URLSearchParams({ action: 'enable_user', user_id: 'mallory' }).toString()}`,
  );
  assert.equal(confirm?.status(), 409);
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /^Not possible \(409\): The directory \(SCIM\) calls this user inactive/,
  );
  assert.equal(await page.getByRole('button', { name: 'Yes, enable user' }).count(), 0);

  // Bob, whom the directory does not manage, is offered Enable, and enabled.
  await page.goto(`${consoleUrl(portal)}user?user_id=bob`);
  assert.equal(await page.locator('#directory-inactive').count(), 0);
  await page.getByRole('link', { name: 'Enable…' }).click();
  await page.getByRole('button', { name: 'Yes, enable user' }).click();
  assert.match((await page.getByRole('status').textContent()) ?? '', /bob was enabled/);

  // Mallory comes back: the directory calls them active and enables them (it disabled them itself).
  await scim.send('PATCH', `Users/${malloryId}`, patchOp({ op: 'replace', path: 'active', value: true }));
  await page.goto(`${consoleUrl(portal)}user?user_id=mallory`);
  assert.match((await page.locator('main').textContent()) ?? '', /State: enabled/);
  assert.equal(await page.locator('#directory-inactive').count(), 0);
  assert.equal(await page.getByRole('link', { name: 'Disable…' }).count(), 1);
  assert.deepEqual(await portal.admin.disabledUsers(), []);
  assert.deepEqual(
    problems,
    ['Failed to load resource: the server responded with a status of 409 (Conflict)'],
    'the refused confirmation only',
  );
});
