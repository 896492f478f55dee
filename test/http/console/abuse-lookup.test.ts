// The console's Abuse lookup page, walked in a real headless Chromium against a real portal: an
// abuse desk's key types an abuse report's public address, port, moment and reason, and the page
// shows who held the client address then, how the NAT mapping led there, or why nobody can be
// named. The node's NAT mapping history is recorded through storage here (the portal records it
// from what a node reports in /i/node: test/core/nodes/nat-history.test.ts).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { DeterministicNat, type NatSettings } from '../../../src/net/deterministic-nat.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { openConnection } from '../../../src/storage/connection-log.js';
import { recordNatMapping } from '../../../src/storage/nat-mappings.js';
import { auditLog, makeAdminKey } from '../../support/admin-keys.js';
import { launchBrowser, openTab, screenshot, signIn } from '../../support/console-browser.js';
import { startTestPortal } from '../../support/test-portal.js';

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser.close();
});

const SETTINGS: NatSettings = { ranges: ['10.44.0.0/24'], publicAddresses: ['192.0.2.10'], portsPerClient: 250 };

async function lookUp(page: Page, fields: { ip: string; port: string; at: string; reason: string }): Promise<void> {
  await page.getByRole('link', { name: 'Abuse lookup', exact: true }).click();
  await page.getByLabel('Public address').fill(fields.ip);
  await page.getByLabel('Port').fill(fields.port);
  await page.getByLabel('Time', { exact: true }).fill(fields.at);
  await page.getByLabel('Reason (kept in the audit log)').fill(fields.reason);
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.waitForLoadState('load');
}

test('an abuse desk types a report’s address, port, time and reason and sees the user behind it, or why there is none', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const db = portal.portal.ctx.db;
  const nodeNumber = asNodeNumber(0);
  await db
    .transaction()
    .execute((trx) =>
      recordNatMapping(
        trx,
        { nodeNumber, appliedAt: '2026-03-01T00:00:00+00:00', mapping: { mode: 'deterministic', settings: SETTINGS } },
        '2026-03-01T00:00:00+00:00',
      ),
    );
  await openConnection(db, {
    userId: asUserId('alice@example.org'),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    connectionId: 'a1',
    nodeNumber,
    ipFour: '10.44.0.7',
    ipSix: 'fd44::7',
    originatingIp: '198.51.100.1',
    connectedAt: new Date('2026-03-01T13:00:00Z'),
  });
  const block = new DeterministicNat(SETTINGS).blockOf('10.44.0.7');
  assert.ok(block !== null);
  const key = await makeAdminKey(portal, 'abuse-desk', { scope: 'read' });
  const { context, page, problems } = await openTab(browser);
  t.after(() => context.close());
  await signIn(page, portal, key);

  await lookUp(page, {
    ip: '192.0.2.10',
    port: String(block.firstPort + 42),
    at: '2026-03-01T14:03:07Z',
    reason: 'CERT ticket 4711',
  });
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Abuse lookup');
  assert.deepEqual(await page.locator('main table tbody tr td:first-child').allTextContents(), ['alice@example.org']);
  assert.match(
    (await page.getByRole('status').textContent()) ?? '',
    new RegExp(
      `node 0 mapped port ${block.firstPort + 42} of 192\\.0\\.2\\.10 to client 10\\.44\\.0\\.7 \\(its ports ${block.firstPort}–${block.lastPort}`,
    ),
  );
  assert.equal(
    await page.getByLabel('Reason (kept in the audit log)').inputValue(),
    'CERT ticket 4711',
    'the form keeps what was asked',
  );
  await screenshot(page, 'abuse-lookup-found');
  const [row] = await auditLog(portal, 1);
  assert.deepEqual(
    [row?.keyName, row?.call, row?.status, row?.userId, row?.parameters['reason']],
    ['abuse-desk', 'attribution', 200, 'alice@example.org', 'CERT ticket 4711'],
    'the look-up is in the audit log with its reason',
  );

  await lookUp(page, { ip: '192.0.2.10', port: '80', at: '2026-03-01T14:03:07Z', reason: 'CERT ticket 4712' });
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /Not possible \(404\): port 80 of 192\.0\.2\.10 is outside every client's block/,
  );
  await lookUp(page, { ip: '192.0.2.10', port: '2000', at: '2026-03-01T14:03:07Z', reason: '' });
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /Not possible \(400\): missing query parameter "reason"/,
    'no reason, no look-up',
  );
  assert.equal(await page.locator('main table').count(), 0);
  await screenshot(page, 'abuse-lookup-no-reason');
  assert.deepEqual(problems, []);
});

test('a time the abuse desk’s zone shows twice is refused, asking for its offset, and nothing is looked up', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const key = await makeAdminKey(portal, 'abuse-desk', { scope: 'read' });
  const { context, page, problems } = await openTab(browser, { timezoneId: 'Europe/Amsterdam' });
  t.after(() => context.close());
  await signIn(page, portal, key);

  // 02:30 on 25 October happens twice in Amsterdam: summer time ends at 03:00, clocks go back to 02:00.
  await lookUp(page, { ip: '192.0.2.10', port: '2000', at: '2026-10-25 02:30', reason: 'CERT ticket 4713' });
  assert.match(
    (await page.getByRole('alert').textContent()) ?? '',
    /Not possible \(400\): 2026-10-25 02:30 happens twice in Europe\/Amsterdam \(at \+02:00 and at \+01:00\): type the time with its offset/,
  );
  assert.equal(await page.getByLabel('Time', { exact: true }).inputValue(), '2026-10-25 02:30', 'the form keeps it');
  assert.deepEqual(
    (await auditLog(portal)).filter((row) => row.call === 'attribution'),
    [],
    'no look-up was made',
  );

  await lookUp(page, { ip: '192.0.2.10', port: '2000', at: '2026-10-25T02:30+01:00', reason: 'CERT ticket 4713' });
  const [row] = await auditLog(portal, 1);
  assert.deepEqual(
    [row?.call, row?.parameters['at']],
    ['attribution', '2026-10-25T02:30+01:00'],
    'with its offset, it is',
  );
  assert.deepEqual(problems, []);
});
