// A console session limited to some profiles sees no more than its key sees through the Admin
// API: on the dashboard, only the nodes of its own profiles, by number, never another profile's
// node or any node's address.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { employeesProfile, makeAdminKey } from '../../support/admin-keys.js';
import { launchBrowser, openTab, signIn } from '../../support/console-browser.js';
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
