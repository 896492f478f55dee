// The console's story with a real tunnel: alice's device is connected through the real node
// agent (wireguard-go in a namespace); an administrator finds her in the console, disables her
// after reading what it will cut, and sees her connection leave the online list, and her
// tunnel stop passing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { launchBrowser, openTab, screenshot, signIn } from '../../support/console-browser.js';
import { LAB_PROFILE, startTunnelLab } from '../../support/tunnel-lab.js';

test('an administrator finds a connected user, disables her, and sees her connection leave the online list', async (t) => {
  const lab = await startTunnelLab();
  t.after(() => lab.close());
  await lab.portal.reconcile();
  await lab.provisionDevice('alice', 'Laptop');
  assert.ok(await lab.ping(10), "alice's tunnel passes");
  const key = await makeAdminKey(lab.portal, 'helpdesk', { scope: 'write' });

  const browser = await launchBrowser();
  t.after(() => browser.close());
  const { page, problems } = await openTab(browser);
  await signIn(page, lab.portal, key);
  problems.length = 0;
  assert.equal(
    await page.locator('section[aria-labelledby="nodes"] .state').textContent(),
    'up',
    'the dashboard shows the node up',
  );

  await page.getByRole('link', { name: 'Online', exact: true }).click();
  assert.match((await page.locator('main').textContent()) ?? '', /alice/, 'alice is online');
  assert.match((await page.locator('main h2').first().textContent()) ?? '', new RegExp(LAB_PROFILE));
  await screenshot(page, 'online-alice');
  await page.getByRole('link', { name: 'Disconnect…' }).click();
  assert.match(
    (await page.locator('#what').textContent()) ?? '',
    new RegExp(
      `^Disconnect alice's "Laptop" \\(${LAB_PROFILE}\\): its configuration is deleted and cut from its node, because a VPN client reconnects by itself\\.`,
    ),
    'the button says that disconnecting deletes the configuration, and offers disabling instead',
  );
  await page.goBack();

  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByLabel('User id starts with').fill('ali');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('link', { name: 'alice' }).click();
  await page.getByRole('link', { name: 'Disable…' }).click();
  assert.equal(
    await page.locator('#what').textContent(),
    `Disable alice: 1 configuration (${LAB_PROFILE}) will be cut from the nodes and 1 connection open now will end. The user cannot connect until enabled again.`,
  );
  await screenshot(page, 'confirm-disable');
  await page.getByRole('button', { name: 'Yes, disable user' }).click();
  assert.equal(await page.getByRole('status').textContent(), 'alice was disabled.');
  assert.match((await page.locator('main').textContent()) ?? '', /State: disabled/);

  await page.getByRole('link', { name: 'Online', exact: true }).click();
  assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /alice/, 'alice left the online list');
  assert.equal(await lab.ping(2), false, "alice's tunnel passes no more");
  assert.deepEqual(problems, []);
});
