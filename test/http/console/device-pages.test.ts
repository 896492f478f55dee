// The console's Devices pages walked in a real headless Chromium against a real portal: an
// administrator finds a device by its serial and by its user, opens it, reads its identity
// (certificate and tenant), history, configurations and sessions, suspends it after a
// confirmation, finds it among the suspended, resumes it and retires it; a read-only key sees
// no button, and a key limited to another profile sees neither the device nor its page.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { openConnection } from '../../../src/storage/connection-log.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { auditLog, makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { consoleUrl, launchBrowser, openTab, screenshot, signIn } from '../../support/console-browser.js';
import { enrollOverTls, MdmCa, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
/** Intune's tenant extension of TENANT: the GUID's first three groups byte-reversed, in an OCTET STRING. */
const TENANT_DER = '04:10:bf:88:f9:72:f1:86:af:41:91:ab:2d:7c:d0:11:db:47';

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser.close();
});

interface Fleet {
  readonly portal: TestPortal;
  /** alice's MacBook: certificate identity, one configuration, one session in the log. */
  readonly laptop: string;
  readonly connectionId: string;
}

/**
 * A portal with alice's laptop (serial C02XK1), enrolled over mutual TLS with a certificate of
 * Intune's tenant, and one session of it in the log; and bob's phone (serial F17PHONE), registered.
 */
async function fleet(t: { after: (fn: () => Promise<void>) => void }): Promise<Fleet> {
  const ca = MdmCa.make('Intune');
  t.after(async () => ca.remove());
  const certificate = ca.device('laptop', {
    cn: 'C02XK1LAPTOP',
    uri: 'urn:mdm:serial:C02XK1',
    intuneTenantDer: TENANT_DER,
  });
  const portal = await startTestPortal({
    config: { ...twoProfiles, enrollment: ca.mutualTlsEnrollment({ intuneTenantId: TENANT }) },
  });
  t.after(portal.close);
  const laptop = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'C02XK1',
    mdm_id: 'intune-7f3a',
  });
  await portal.admin.registerDevice({ user_id: 'bob', profile_id: 'employees', platform: 'ios', serial: 'F17PHONE' });
  const url = tlsEnrollUrl(portal);
  const connectionId = generateWireGuardKeyPair().publicKey;
  const enrolled = await enrollOverTls(url, ca, certificate, { public_key: connectionId });
  assert.equal(enrolled.status, 200, enrolled.text);
  await openConnection(portal.portal.ctx.db, {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    connectionId,
    nodeNumber: asNodeNumber(0),
    ipFour: '10.44.0.2',
    ipSix: 'fd44::2',
    originatingIp: '192.0.2.77',
    connectedAt: new Date(Date.now() - 3_600_000),
  });
  return { portal, laptop: laptop.device_id, connectionId };
}

async function search(page: Page, fields: Readonly<Record<string, string>>): Promise<string[]> {
  await page.getByRole('link', { name: 'Devices', exact: true }).click();
  for (const [label, value] of Object.entries(fields)) {
    if (label === 'State' || label === 'Platform') await page.getByLabel(label).selectOption(value);
    else await page.getByLabel(label, { exact: true }).fill(value);
  }
  await page.getByRole('button', { name: 'Search' }).click();
  await page.waitForLoadState('load');
  return page.locator('main table tbody tr').allTextContents();
}

function text(page: Page, selector: string): Promise<string> {
  return page
    .locator(selector)
    .first()
    .textContent()
    .then((content) => content ?? '');
}

test('an administrator finds a device by serial and by user, reads its page, and suspends, resumes and retires it after confirming', async (t) => {
  const { portal, laptop, connectionId } = await fleet(t);
  const key = await makeAdminKey(portal, 'helpdesk', { scope: 'write' });
  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);

  const bySerial = await search(page, { 'Serial number': 'C02XK1' });
  assert.equal(bySerial.length, 1, 'one device has that serial');
  assert.match(bySerial[0] ?? '', /alice.*macos.*employees.*C02XK1.*intune-7f3a.*active/);
  const byUser = await search(page, { User: 'bob' });
  assert.equal(byUser.length, 1, 'bob has one device');
  assert.match(byUser[0] ?? '', /bob.*ios.*F17PHONE.*registered.*never/);
  assert.deepEqual(await search(page, { Platform: 'android' }), [], 'no android device');
  await screenshot(page, 'devices');

  await search(page, { 'Serial number': 'C02XK1' });
  await page.getByRole('link', { name: laptop }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Device C02XK1');
  const identity = await text(page, 'section[aria-labelledby="identity"]');
  const bound = (await portal.admin.device(laptop)).certificate;
  assert.ok(bound !== null, 'the enrollment bound the certificate');
  for (const shown of [
    'CN=C02XK1LAPTOP',
    bound.issuer,
    bound.serial_number,
    `Intune tenant ${TENANT}`,
    'intune-7f3a',
    'its MDM certificate',
  ])
    assert.ok(identity.includes(shown), `the identity shows ${shown}: ${identity}`);
  const history = await page.locator('section[aria-labelledby="history"] tbody tr').allTextContents();
  assert.equal(history.length, 2);
  assert.match(history[0] ?? '', /registered.*registered.*secret/);
  assert.match(history[1] ?? '', /enrolled.*registered → active.*certificate .*\(device\)/);
  assert.match(
    await text(page, 'section[aria-labelledby="configurations"]'),
    new RegExp(`employees.*wireguard.*${literally(connectionId)}`),
  );
  assert.match(await text(page, 'section[aria-labelledby="sessions"]'), /10\.44\.0\.2.*192\.0\.2\.77.*open/);
  await screenshot(page, 'device');

  await page.getByLabel('Reason').fill('reported lost');
  await page.getByRole('button', { name: 'Suspend…' }).click();
  assert.match(
    await text(page, '#what'),
    new RegExp(
      `^Suspend device ${laptop} \\(serial C02XK1\\) of alice \\(reason: reported lost\\): 1 configuration \\(employees\\) will be cut from the nodes and 1 connection open now \\(node 0\\) will end\\. They are kept: the device connects again once resumed\\.$`,
    ),
  );
  await screenshot(page, 'confirm-suspend-device');
  await page.getByRole('button', { name: 'Yes, suspend device' }).click();
  assert.equal(
    await page.getByRole('status').textContent(),
    `${laptop} was suspended: its configurations are off the nodes.`,
  );
  assert.match(await text(page, '#device-state'), /^suspended \(reported lost, since .+, by helpdesk\)$/);
  const suspendedHistory = await page.locator('section[aria-labelledby="history"] tbody tr').allTextContents();
  assert.match(
    suspendedHistory[2] ?? '',
    /suspended.*active → suspended.*reported lost.*helpdesk[0-9a-f]{8}-[0-9a-f]{4}-/,
  );
  assert.equal((await search(page, { State: 'suspended' })).length, 1, 'the suspended device is found by its state');

  await page.getByRole('link', { name: laptop }).click();
  await page.getByRole('link', { name: 'Resume…' }).click();
  assert.match(
    await text(page, '#what'),
    new RegExp(
      `^Resume device ${laptop} \\(serial C02XK1\\) of alice, suspended since .+ \\(reported lost, by helpdesk\\): 1 configuration \\(employees\\) goes back on its node`,
    ),
  );
  await page.getByRole('button', { name: 'Yes, resume device' }).click();
  assert.equal(await page.getByRole('status').textContent(), `${laptop} was resumed.`);
  assert.equal(await text(page, '#device-state'), 'active');
  assert.match(
    (await page.locator('section[aria-labelledby="history"] tbody tr').allTextContents())[3] ?? '',
    /resumed.*suspended → active.*helpdesk/,
  );

  await page.getByRole('link', { name: 'Retire…' }).click();
  assert.match(
    await text(page, '#what'),
    /for good: 1 configuration \(employees\) will be deleted and cut from the nodes, its enrollment tokens revoked, and 1 connection open now \(node 0\) will end\. This cannot be undone/,
  );
  await page.getByRole('button', { name: 'Yes, retire device' }).click();
  assert.equal(await page.getByRole('status').textContent(), `${laptop} was retired.`);
  assert.equal(await text(page, '#device-state'), 'retired');
  assert.equal(
    await page.getByRole('link', { name: /Suspend|Resume|Retire/ }).count(),
    0,
    'a retired device offers no change',
  );
  assert.equal(await page.getByRole('button', { name: /Suspend/ }).count(), 0);
  assert.match(await text(page, 'section[aria-labelledby="configurations"]'), /None: retiring deleted them\./);
  assert.match(
    (await page.locator('section[aria-labelledby="history"] tbody tr').allTextContents())[4] ?? '',
    /retired.*active → retired.*helpdesk/,
  );
  const calls = (await auditLog(portal)).filter((entry) => entry.keyName === 'helpdesk').map((entry) => entry.call);
  for (const call of ['suspend_device', 'resume_device', 'retire_device'])
    assert.ok(calls.includes(call), `${call} is in the audit log under the key's name`);
  assert.deepEqual(problems, [], 'no script error and no Content-Security-Policy violation');

  const phone = await openTab(browser, { phone: true });
  t.after(() => phone.context.close());
  await signIn(phone.page, portal, key);
  await phone.page.goto(`${consoleUrl(portal)}device?device_id=${laptop}`);
  const overflow = Number(await phone.page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
  assert.ok(overflow <= 0, `the device page fits a phone's width (overflows by ${overflow}px)`);
  await screenshot(phone.page, 'device-phone');
});

test('a read-only session sees devices but no button; a session limited to another profile sees neither the device nor its page', async (t) => {
  const { portal, laptop } = await fleet(t);
  const viewer = await makeAdminKey(portal, 'viewer', { scope: 'read' });
  const { context, page } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, viewer);
  assert.equal((await search(page, { 'Serial number': 'C02XK1' })).length, 1);
  await page.goto(`${consoleUrl(portal)}user?user_id=alice`);
  // The user's page lists the device and leads to its page.
  await page.locator('section[aria-labelledby="devices"]').getByRole('link', { name: laptop }).click();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Device C02XK1');
  assert.match(await text(page, 'section[aria-labelledby="history"]'), /enrolled/);
  assert.equal(await page.getByRole('link', { name: /Suspend|Resume|Retire/ }).count(), 0, 'no change is offered');
  assert.equal(await page.getByRole('button', { name: /Suspend|Resume|Retire/ }).count(), 0);
  assert.equal(await page.getByLabel('Reason').count(), 0);

  const guests = await makeAdminKey(portal, 'guest-desk', { scope: 'write', profiles: ['guests'] });
  const limited = await openTab(browser);
  t.after(() => limited.context.close());
  await signIn(limited.page, portal, guests);
  assert.deepEqual(await search(limited.page, {}), [], 'no device of employees is listed');
  assert.match(await text(limited.page, 'main'), /No devices match\./);
  const refused = await limited.page.goto(`${consoleUrl(portal)}device?device_id=${laptop}`);
  assert.equal(refused?.status(), 403);
  assert.match(
    await text(limited.page, '[role="alert"]'),
    /Not allowed \(403\):.*key "guest-desk" may not use profile "employees" \(it is limited to: guests\)/,
  );
  assert.doesNotMatch(await text(limited.page, 'main'), /C02XK1/, 'nothing of the device is shown');
});

/** A text as a regular expression that matches it literally. */
function literally(literal: string): string {
  return literal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
