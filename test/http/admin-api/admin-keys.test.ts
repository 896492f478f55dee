// Admin keys at the door: expired, revoked, rotated-out, mistyped and foreign keys are 401
// like a wrong secret (and change nothing); a key's own allow-list applies on top of
// adminApi.allowList, also behind a trusted proxy; "last used" is written at most once a
// minute; and the specification's secret keeps working as before.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { rotateAdminKey, revokeAdminKey } from '../../../src/core/access/admin-keys.js';
import { findAdminKey } from '../../../src/storage/admin-keys.js';
import { auditLog, bearer, makeAdminKey, ManualClock, mistyped, portalState } from '../../support/admin-keys.js';
import { errorBody, rawRequest } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

const MINUTE = 60_000;

test('expired, revoked, rotated-out, mistyped and unknown keys get the same 401 as a wrong secret, and their calls change nothing', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  const expiring = await makeAdminKey(portal, 'expiring', { expiresIn: 'PT1H' });
  const revoked = await makeAdminKey(portal, 'revoked');
  const rotating = await makeAdminKey(portal, 'rotating');
  assert.equal((await portal.get('/users', {}, bearer(expiring))).status, 200);
  await revokeAdminKey(portal.portal.ctx, 'revoked');
  const rotation = await rotateAdminKey(portal.portal.ctx, 'rotating', 'PT10M');
  assert.equal(
    (await portal.get('/users', {}, bearer(rotating))).status,
    200,
    'the old key works during its grace period',
  );
  clock.advance(61 * MINUTE);

  // The last character of a valid key changed: the checksum no longer matches.
  const misspelt = mistyped(rotation.token);
  // A well-formed key of another portal (another pepper, another database).
  const otherPortal = await startTestPortal();
  t.after(() => otherPortal.close());
  const foreign = await makeAdminKey(otherPortal, 'foreign');

  const before = await portalState(portal);
  const attempts: Record<string, string> = {
    expired: expiring,
    revoked,
    'rotated out': rotating,
    mistyped: misspelt,
    foreign,
    'a prefix only': 'vpa_',
  };
  for (const [what, key] of Object.entries(attempts)) {
    for (const [method, target] of [
      ['GET', '/users'],
      ['POST', '/destroy'],
    ] as const) {
      const response = await rawRequest(`${portal.adminBase}${target}`, {
        method,
        headers: { ...bearer(key), 'content-type': 'application/x-www-form-urlencoded' },
        body: method === 'POST' ? 'user_id=alice' : undefined,
      });
      assert.equal(response.status, 401, `${what} ${target}`);
      assert.equal(errorBody(response.text), 'authentication required', what);
      assert.equal(response.headers['www-authenticate'], 'Bearer realm="Admin API"', what);
    }
  }
  assert.deepEqual(await portalState(portal), before, 'no call changed anything');
  assert.equal((await portal.get('/users', {}, bearer(rotation.token))).status, 200, 'the new key works');

  // The audit log says why, the client is told no more than for a wrong secret.
  // Refusals of one source and reason in a minute are one row (the GET and the POST of each key;
  // the mistyped key and the bare prefix alike).
  const reasons = (await auditLog(portal))
    .filter((row) => row.status === 401)
    .map((row) => [row.keyName, row.detail, row.repeated]);
  assert.deepEqual(reasons.reverse(), [
    ['expiring', 'admin key "expiring" expired at 2026-03-02T10:00:00+00:00', 1],
    ['revoked', 'admin key "revoked" was revoked at 2026-03-02T09:00:00+00:00', 1],
    ['rotating', 'admin key "rotating" was rotated out; its grace period ended at 2026-03-02T09:10:00+00:00', 1],
    [null, 'not an admin key: wrong checksum or form', 3],
    [null, 'unknown admin key', 1],
  ]);
});

test("a key's own allow-list applies on top of adminApi.allowList, to the address a trusted proxy forwarded", async (t) => {
  const behindProxy = await startTestPortal({
    config: {
      adminApi: { allowList: ['127.0.0.0/8', '192.0.2.0/24', '198.51.100.0/24'], trustedProxyList: ['127.0.0.1/32'] },
    },
  });
  t.after(() => behindProxy.close());
  const mdm = await makeAdminKey(behindProxy, 'mdm', { scope: 'write', allowList: ['192.0.2.0/24'] });
  const outsideGlobal = await makeAdminKey(behindProxy, 'outside', { allowList: ['203.0.113.0/24'] });

  const allowed = await behindProxy.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees' },
    { ...bearer(mdm), 'x-forwarded-for': '192.0.2.7' },
  );
  assert.equal(allowed.status, 200, allowed.text);

  const before = await behindProxy.admin.userConfigurationList('alice');
  const elsewhere = await behindProxy.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees' },
    { ...bearer(mdm), 'x-forwarded-for': '198.51.100.9' },
  );
  assert.equal(elsewhere.status, 403);
  assert.equal(errorBody(elsewhere.text), 'source address 198.51.100.9 is not allowed for key "mdm"');
  const theProxyItself = await behindProxy.get('/users', {}, bearer(mdm));
  assert.equal(theProxyItself.status, 403);
  assert.equal(errorBody(theProxyItself.text), 'source address 127.0.0.1 is not allowed for key "mdm"');
  // The key allows 203.0.113.0/24 but the portal does not: the portal's list comes first.
  const global = await behindProxy.get('/users', {}, { ...bearer(outsideGlobal), 'x-forwarded-for': '203.0.113.5' });
  assert.equal(global.status, 403);
  assert.equal(errorBody(global.text), 'source address not allowed');
  assert.deepEqual(await behindProxy.admin.userConfigurationList('alice'), before, 'the refused create made nothing');
  const refusals = (await auditLog(behindProxy))
    .filter((row) => row.status === 403)
    .map((row) => [row.keyName, row.sourceAddress, row.call]);
  assert.deepEqual(refusals.reverse(), [
    ['mdm', '198.51.100.9', 'create'],
    ['mdm', '127.0.0.1', 'users'],
    [null, '203.0.113.5', 'users'],
  ]);

  // Without a trusted proxy the header is ignored: the key is judged by the peer's own address.
  const direct = await startTestPortal();
  t.after(() => direct.close());
  const remote = await makeAdminKey(direct, 'remote', { allowList: ['192.0.2.0/24'] });
  const local = await makeAdminKey(direct, 'local', { allowList: ['127.0.0.1/32', '::1/128'] });
  const spoofed = await direct.get('/users', {}, { ...bearer(remote), 'x-forwarded-for': '192.0.2.7' });
  assert.equal(spoofed.status, 403);
  assert.equal(errorBody(spoofed.text), 'source address 127.0.0.1 is not allowed for key "remote"');
  assert.equal((await direct.get('/users', {}, bearer(local))).status, 200);
});

test('"last used" is written at most once a minute per key, with the address it came from', async (t) => {
  const clock = new ManualClock();
  // The minute passes on the monotonic clock too: real time, plus what the story lets pass.
  const realNow = performance.now.bind(performance);
  let passed = 0;
  t.mock.method(performance, 'now', () => realNow() + passed);
  const advance = (ms: number): void => {
    clock.advance(ms);
    passed += ms;
  };
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const monitor = await makeAdminKey(portal, 'monitor', { scope: 'read' });
  const keyId = monitor.slice(4, 16);
  const lastUsed = async () => {
    // Noting the use does not hold up the call; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const key = await findAdminKey(portal.portal.ctx.db, keyId);
    return [key?.lastUsedAt, key?.lastUsedAddress];
  };
  assert.deepEqual(await lastUsed(), [null, null]);
  assert.equal((await portal.get('/users', {}, bearer(monitor))).status, 200);
  assert.deepEqual(await lastUsed(), ['2026-03-02T09:00:00+00:00', '127.0.0.1']);
  for (let second = 0; second < 50; second += 10) {
    advance(10_000);
    assert.equal((await portal.get('/users', {}, bearer(monitor))).status, 200);
  }
  assert.deepEqual(
    await lastUsed(),
    ['2026-03-02T09:00:00+00:00', '127.0.0.1'],
    'GETs within the minute wrote nothing',
  );
  advance(11_000);
  assert.equal((await portal.get('/users', {}, bearer(monitor))).status, 200);
  assert.deepEqual(await lastUsed(), ['2026-03-02T09:01:01+00:00', '127.0.0.1'], 'a minute later it is written again');
});

test('admin keys work while the specification secret does not exist, and the secret keeps every right when it does', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-keys-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const withoutSecret = await startTestPortal({ adminApi: false, dataDir });
  const helpdesk = await makeAdminKey(withoutSecret, 'helpdesk', { scope: 'write' });
  assert.equal(
    (await withoutSecret.post('/create', { user_id: 'alice', profile_id: 'employees' }, bearer(helpdesk))).status,
    200,
  );
  const noKey = await rawRequest(`${withoutSecret.adminBase}/users`);
  assert.equal(noKey.status, 503, 'without a key the API still says it is disabled, as before');
  await withoutSecret.close();

  const withSecret = await startTestPortal({ dataDir });
  t.after(() => withSecret.close());
  assert.equal((await withSecret.get('/users', {}, bearer(helpdesk))).status, 200, 'the same key, after a restart');
  assert.equal((await withSecret.post('/delete_user_authorizations', { user_id: 'alice' })).status, 204);
  assert.equal((await withSecret.post('/destroy', { user_id: 'alice' })).status, 204);
  assert.equal((await withSecret.get('/audit_log')).status, 200);
  assert.deepEqual(
    (await auditLog(withSecret)).map((row) => [row.keyName, row.call, row.status]),
    [
      ['secret', 'destroy', 204],
      ['secret', 'delete_user_authorizations', 204],
      ['helpdesk', 'create', 200],
    ],
  );
});
