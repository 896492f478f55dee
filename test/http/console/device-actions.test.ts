// The console's device changes refused over plain HTTP, as a forged or mistaken form would be
// sent: a read-only session, a session limited to another profile, a form without the session's
// CSRF token or from another site, an unknown or malformed device. Each answers its status with
// the reason on the page, and the device, its history and its configurations stay as they were;
// the guard's refusals are audited. A page another page embeds or fetches is refused too. A
// device suspended for two reasons shows both, and the resume's confirmation says it ends both.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { suspendDevice } from '../../../src/core/devices/index.js';
import { asDeviceId } from '../../../src/shared/ids.js';
import type { AuditRecord } from '../../../src/storage/audit-log.js';
import { auditLog, makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { rawRequest } from '../../support/raw-http.js';
import { consoleUrl } from '../../support/console-browser.js';
import { signIn, type FormSession } from '../../support/console-forms.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

async function post(
  portal: TestPortal,
  session: FormSession,
  form: Record<string, string>,
  site = 'same-origin',
): Promise<{ status: number; text: string }> {
  const answer = await fetch(`${consoleUrl(portal)}do`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: session.cookie,
      'content-type': 'application/x-www-form-urlencoded',
      'sec-fetch-site': site,
    },
    body: new URLSearchParams(form).toString(),
  });
  return { status: answer.status, text: await answer.text() };
}

async function get(portal: TestPortal, session: FormSession, path: string): Promise<{ status: number; text: string }> {
  const answer = await fetch(`${consoleUrl(portal)}${path}`, { headers: { cookie: session.cookie } });
  return { status: answer.status, text: await answer.text() };
}

/** How many refusals the audit rows stand for, by key and reason (a row counts its repeats too). */
function refusalCounts(rows: readonly AuditRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of rows) {
    const name = `${row.keyName ?? '(nobody)'}: ${row.detail ?? ''}`;
    counts[name] = (counts[name] ?? 0) + 1 + row.repeated;
  }
  return counts;
}

/** What a device change can touch. */
async function devicesState(portal: TestPortal): Promise<string> {
  const db = portal.portal.ctx.db;
  return JSON.stringify({
    devices: await db.selectFrom('devices').selectAll().orderBy('device_id').execute(),
    history: await db.selectFrom('device_history').selectAll().orderBy('history_id').execute(),
    peers: await db.selectFrom('wg_peers').selectAll().orderBy('public_key').execute(),
    receipts: await db.selectFrom('revocations').selectAll().orderBy('revocation_id').execute(),
  });
}

async function portalWithDevice(t: { after: (fn: () => Promise<void>) => void }) {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(portal.close);
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'windows',
    serial: 'PF3X9',
  });
  const created = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', device_id: device.device_id },
    { accept: 'application/x-wireguard-profile' },
  );
  assert.equal(created.status, 200, created.text);
  return { portal, deviceId: device.device_id };
}

test('a read-only session may not suspend, resume or retire a device: 403 naming the scope, audited, nothing changed', async (t) => {
  const { portal, deviceId } = await portalWithDevice(t);
  const viewer = await signIn(portal, await makeAdminKey(portal, 'viewer', { scope: 'read' }), 'devices');
  const page = await get(portal, viewer, `device?device_id=${deviceId}`);
  assert.equal(page.status, 200);
  assert.doesNotMatch(page.text, /Suspend…|Resume…|Retire…/, 'no change is offered');
  const before = await devicesState(portal);
  for (const action of ['suspend_device', 'resume_device', 'retire_device']) {
    const refused = await post(portal, viewer, { action, device_id: deviceId, csrf: viewer.csrf });
    assert.equal(refused.status, 403, action);
    assert.match(
      refused.text,
      new RegExp(`key &#34;viewer&#34; has scope &#34;read&#34;; ${action} needs scope &#34;write&#34;`),
    );
    const [newest] = await auditLog(portal, 1);
    assert.deepEqual([newest?.keyName, newest?.call, newest?.status], ['viewer', action, 403], `${action} audited`);
  }
  assert.equal(await devicesState(portal), before);
});

test('a form without the session’s CSRF token, or sent from another site, is refused before anything is done', async (t) => {
  const { portal, deviceId } = await portalWithDevice(t);
  const admin = await signIn(portal, portal.secret, 'devices');
  const before = await devicesState(portal);
  const withoutToken = await post(portal, admin, { action: 'retire_device', device_id: deviceId });
  assert.equal(withoutToken.status, 403);
  assert.match(withoutToken.text, /CSRF token missing or wrong/);
  const wrongToken = await post(portal, admin, { action: 'retire_device', device_id: deviceId, csrf: 'x'.repeat(43) });
  assert.equal(wrongToken.status, 403);
  const crossSite = await post(
    portal,
    admin,
    { action: 'retire_device', device_id: deviceId, csrf: admin.csrf },
    'cross-site',
  );
  assert.equal(crossSite.status, 403);
  assert.match(crossSite.text, /cross-site request refused/);
  assert.equal(await devicesState(portal), before);
  // Each refusal is in the audit log: the forms of the session under its caller, the cross-site
  // one under nobody (repeats within a minute are counted into one row).
  const refusals = (await auditLog(portal, 10)).filter((row) => row.call === 'console/request');
  assert.ok(refusals.every((row) => row.status === 403 && row.parameters['path'] === '/vpn-user-portal/admin/do'));
  assert.deepEqual(refusalCounts(refusals), {
    '(nobody): A change must be made from a page of the console (cross-site request refused).': 1,
    'secret: The form was not sent from this session (CSRF token missing or wrong); nothing was changed.': 2,
  });
  const done = await post(portal, admin, { action: 'suspend_device', device_id: deviceId, csrf: admin.csrf });
  assert.equal(done.status, 303, 'the same form with its token is made');
  assert.equal((await portal.admin.device(deviceId)).state, 'suspended');
});

test('a page another page of the same site embeds or fetches is refused and audited; following a link to it opens it', async (t) => {
  const { portal } = await portalWithDevice(t);
  const admin = await signIn(portal, portal.secret, 'devices');
  const lookup = `abuse?ip=${encodeURIComponent('192.0.2.7')}&at=${encodeURIComponent('2026-11-28T10:00:00Z')}&reason=ticket-1`;
  // As the browser sends them (fetch would put its own Sec-Fetch-Mode in).
  const asked = (site: string, mode: string, dest: string) =>
    rawRequest(`${consoleUrl(portal)}${lookup}`, {
      headers: { cookie: admin.cookie, 'sec-fetch-site': site, 'sec-fetch-mode': mode, 'sec-fetch-dest': dest },
    });
  for (const [site, mode, dest] of [
    ['same-site', 'no-cors', 'image'],
    ['cross-site', 'cors', 'empty'],
    ['same-site', 'navigate', 'iframe'],
  ] as const) {
    const embedded = await asked(site, mode, dest);
    assert.equal(embedded.status, 403, `${site} ${mode} ${dest}`);
    assert.match(embedded.text, /not embedded or fetched by one/);
  }
  const lookups = (await auditLog(portal, 20)).filter((row) => row.parameters['reason'] === 'ticket-1');
  assert.deepEqual(lookups, [], 'no look-up was made in the administrator’s name');
  const refused = (await auditLog(portal, 20)).filter((row) => row.call === 'console/request');
  assert.ok(refused.every((row) => row.status === 403 && row.parameters['path'] === '/vpn-user-portal/admin/abuse'));
  assert.deepEqual(refusalCounts(refused), {
    '(nobody): A page of the console may be opened from another site, not embedded or fetched by one.': 3,
  });

  const followed = await asked('same-site', 'navigate', 'document');
  assert.equal(followed.status, 200);
});

test('a session limited to another profile neither sees nor changes the device: 403 naming the profile, nothing changed', async (t) => {
  const { portal, deviceId } = await portalWithDevice(t);
  const guests = await signIn(
    portal,
    await makeAdminKey(portal, 'guest-desk', { scope: 'write', profiles: ['guests'] }),
    'devices',
  );
  const list = await get(portal, guests, 'devices?serial=PF3X9');
  assert.equal(list.status, 200);
  assert.doesNotMatch(list.text, new RegExp(deviceId), 'not listed');
  assert.match(list.text, /No devices match\./);
  const limit = /key &#34;guest-desk&#34; may not use profile &#34;employees&#34; \(it is limited to: guests\)/;
  for (const path of [`device?device_id=${deviceId}`, `confirm?action=suspend_device&device_id=${deviceId}`]) {
    const page = await get(portal, guests, path);
    assert.equal(page.status, 403, path);
    assert.match(page.text, limit, path);
    assert.doesNotMatch(page.text, /PF3X9/, `${path}: nothing of the device is shown`);
  }
  const before = await devicesState(portal);
  for (const action of ['suspend_device', 'retire_device']) {
    const refused = await post(portal, guests, { action, device_id: deviceId, csrf: guests.csrf });
    assert.equal(refused.status, 403, action);
    assert.match(refused.text, limit, action);
  }
  assert.equal(await devicesState(portal), before);
});

test('an unknown or malformed device, or a bad search, answers its status with the reason and changes nothing', async (t) => {
  const { portal } = await portalWithDevice(t);
  const admin = await signIn(portal, portal.secret, 'devices');
  const before = await devicesState(portal);
  const unknown = await get(portal, admin, 'device?device_id=dev_000000000000000000000000');
  assert.equal(unknown.status, 404);
  assert.match(unknown.text, /Not possible \(404\):.*no device with this &#34;device_id&#34;/);
  const malformed = await get(portal, admin, 'device?device_id=%3Cscript%3E');
  assert.equal(malformed.status, 400);
  assert.doesNotMatch(malformed.text, /<script>/, 'the id is shown as text');
  const retire = await post(portal, admin, {
    action: 'retire_device',
    device_id: 'dev_000000000000000000000000',
    csrf: admin.csrf,
  });
  assert.equal(retire.status, 404);
  const badState = await get(portal, admin, 'devices?state=lost');
  assert.equal(badState.status, 200, 'the page stands; its list says why');
  assert.match(badState.text, /Not possible \(400\):.*state/);
  assert.equal(await devicesState(portal), before);
});

test("a device suspended by two checks shows both reasons on its page, and the resume's confirmation says it ends them all", async (t) => {
  const { portal, deviceId } = await portalWithDevice(t);
  const ctx = portal.portal.ctx;
  await suspendDevice(ctx, { deviceId: asDeviceId(deviceId), reason: 'noncompliant', by: '(portal)' });
  await suspendDevice(ctx, { deviceId: asDeviceId(deviceId), reason: 'jamf-group', by: 'jamf' });
  const admin = await signIn(portal, portal.secret, 'devices');
  const page = await get(portal, admin, `device?device_id=${deviceId}`);
  assert.equal(page.status, 200);
  assert.match(
    page.text,
    /suspended \(noncompliant, since [^,]+, by \(portal\); also jamf-group, since [^,]+, by jamf\)/,
  );
  const confirm = await get(portal, admin, `confirm?action=resume_device&device_id=${deviceId}`);
  assert.equal(confirm.status, 200);
  assert.match(
    confirm.text,
    /\(noncompliant, by \(portal\)\) and also for jamf-group \(by jamf\), which this resume ends too/,
  );
});
