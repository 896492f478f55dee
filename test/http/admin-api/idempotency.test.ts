// Safe retries for provisioning systems: a POST with an Idempotency-Key runs once per admin
// key lineage and key; a retry with the same parameters within 24 hours gets the first answer (the
// same file, never a new key pair), also from 50 requests at once and after a restart; other
// parameters are 422; the kept answer is sealed at rest and gone after 24 hours, or as soon as the
// configuration it handed out is revoked (deleted, expired, its user disabled or destroyed): a
// retry then gets 410 and creates nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { revokeAdminKey, rotateAdminKey } from '../../../src/core/access/admin-keys.js';
import { asWireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import {
  auditLog,
  bearer,
  employeesProfile,
  makeAdminKey,
  ManualClock,
  twoProfiles,
} from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, UNREACHABLE_NODE, type ApiResponse, type TestPortal } from '../../support/test-portal.js';

const HOUR = 60 * 60 * 1000;
const alice = { user_id: 'alice', profile_id: 'employees' };
const withKey = (key: string, headers: Record<string, string> = {}) => ({ 'idempotency-key': key, ...headers });

async function configurationCount(portal: TestPortal, userId = 'alice'): Promise<number> {
  const users = await portal.admin.users();
  return users.includes(userId) ? (await portal.admin.userConfigurationList(userId)).length : 0;
}

test('a retried create with the same Idempotency-Key gets the same file and makes one configuration; other parameters get 422', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const first = await portal.post('/create', alice, withKey('mdm-device-42'));
  assert.equal(first.status, 200, first.text);
  const retry = await portal.post('/create', alice, withKey('mdm-device-42'));
  assert.equal(retry.status, 200);
  assert.equal(retry.text, first.text, 'byte for byte: the same private key, the same addresses');
  for (const header of ['content-type', 'expires'])
    assert.equal(retry.headers.get(header), first.headers.get(header), header);
  assert.equal(await configurationCount(portal), 1);

  const refusals: [Record<string, string>, Record<string, string>][] = [
    [{ ...alice, display_name: 'Phone' }, {}],
    [{ user_id: 'bob', profile_id: 'employees' }, {}],
    [alice, { accept: 'application/x-apple-aspen-config' }],
  ];
  for (const [form, headers] of refusals) {
    const other = await portal.post('/create', form, withKey('mdm-device-42', headers));
    assert.equal(other.status, 422, JSON.stringify(form));
    assert.equal(
      errorBody(other.text),
      'Idempotency-Key "mdm-device-42" was used for another request (other call or parameters) within 24 hours',
    );
  }
  const otherCall = await portal.post('/disable_user', { user_id: 'alice' }, withKey('mdm-device-42'));
  assert.equal(otherCall.status, 422, 'another call with the key');
  assert.deepEqual(await portal.admin.users(), ['alice'], 'bob was not made');
  assert.deepEqual(await portal.admin.disabledUsers(), []);
  assert.equal(await configurationCount(portal), 1);

  const another = await portal.post('/create', alice, withKey('mdm-device-43'));
  assert.notEqual(another.text, first.text, 'another key is another request');
  assert.equal(await configurationCount(portal), 2);
  const rows = (await auditLog(portal)).reverse();
  assert.deepEqual(
    rows.map((row) => [row.call, row.status, row.connectionIds.length, row.parameters['Idempotency-Key']]).slice(0, 2),
    [
      ['create', 200, 1, 'mdm-device-42'],
      ['create', 200, 0, 'mdm-device-42'],
    ],
  );
  assert.match(
    rows[1]?.detail ?? '',
    /answer of an earlier request with this Idempotency-Key given again; nothing changed/,
  );
});

test('the answer commits with the configuration: when the change is announced, the answer for a retry is already kept', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const seen: string[] = [];
  portal.portal.ctx.events.afterCommit(async (event) => {
    if (event.type !== 'configuration.created') return;
    const record = await portal.portal.ctx.db
      .selectFrom('idempotency_records')
      .select(['state', 'status'])
      .executeTakeFirst();
    seen.push(`${record?.state}/${record?.status}`);
  });
  assert.equal((await portal.post('/create', alice, withKey('atomic'))).status, 200);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(seen, ['done/200'], 'kept in the transaction that stored the configuration, not after it');
});

test('50 concurrent creates with one Idempotency-Key make one configuration and all get its file', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const answers = await Promise.all(Array.from({ length: 50 }, () => portal.post('/create', alice, withKey('burst'))));
  assert.deepEqual([...new Set(answers.map((answer) => answer.status))], [200]);
  assert.equal(new Set(answers.map((answer) => answer.text)).size, 1, 'one file for all');
  assert.equal(await configurationCount(portal), 1);
  const changes = (await auditLog(portal)).filter((row) => row.connectionIds.length > 0);
  assert.equal(changes.length, 1, 'one change recorded');
});

test('the answer survives a restart, sealed at rest (no private key in the database), and is given again after it', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-idempotency-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const config = {
    ProfileList: [
      employeesProfile,
      {
        profileId: 'staff',
        displayName: 'Staff',
        hostName: 'vpn.example.org',
        oRangeFour: '10.60.0.0/24',
        oRangeSix: 'fd60::/64',
        nodeUrl: UNREACHABLE_NODE,
      },
    ],
  };
  const before = await startTestPortal({ dataDir, config });
  const mdm = await makeAdminKey(before, 'mdm', { scope: 'write' });
  const wireGuard = await before.post('/create', alice, { ...bearer(mdm), ...withKey('wg-1') });
  const openVpn = await before.post(
    '/create',
    { user_id: 'alice', profile_id: 'staff' },
    { ...bearer(mdm), ...withKey('ovpn-1'), accept: 'application/x-openvpn-profile' },
  );
  assert.equal(wireGuard.status, 200, wireGuard.text);
  assert.equal(openVpn.status, 200, openVpn.text);
  const privateKey = /^PrivateKey = (.+)$/m.exec(wireGuard.text)?.[1] ?? '';
  const clientKeyPem = /<key>\n([\s\S]+?)<\/key>/.exec(openVpn.text)?.[1] ?? '';
  assert.ok(privateKey.length > 40 && clientKeyPem.includes('PRIVATE KEY'));
  const stored = JSON.stringify(await before.portal.ctx.db.selectFrom('idempotency_records').selectAll().execute());
  for (const secret of [privateKey, clientKeyPem.split('\n')[1] ?? '', '[Interface]', 'BEGIN']) {
    assert.equal(stored.includes(secret), false, `sealed: ${secret.slice(0, 10)}…`);
  }
  assert.equal(statSync(path.join(dataDir, 'keys', 'idempotency.key')).mode & 0o777, 0o600);
  await before.close();

  const after = await startTestPortal({ dataDir, config });
  t.after(() => after.close());
  const wireGuardAgain = await after.post('/create', alice, { ...bearer(mdm), ...withKey('wg-1') });
  const openVpnAgain = await after.post(
    '/create',
    { user_id: 'alice', profile_id: 'staff' },
    { ...bearer(mdm), ...withKey('ovpn-1'), accept: 'application/x-openvpn-profile' },
  );
  assert.equal(wireGuardAgain.text, wireGuard.text);
  assert.equal(openVpnAgain.text, openVpn.text, 'the same certificate and client key');
  assert.equal(await configurationCount(after), 2);

  // Keys are kept per admin key lineage: the same Idempotency-Key of another integration is its own request.
  const other = await after.post('/create', alice, withKey('wg-1'));
  assert.equal(other.status, 200);
  assert.notEqual(other.text, wireGuard.text);
  assert.equal(await configurationCount(after), 3);
});

test('after 24 hours the answer is gone: pruned, and the same key makes a new configuration', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const first = await portal.post('/create', alice, withKey('daily'));
  clock.advance(23 * HOUR);
  await portal.portal.reconcileNow();
  assert.equal((await portal.post('/create', alice, withKey('daily'))).text, first.text, 'within 24 hours');
  clock.advance(HOUR);
  await portal.portal.reconcileNow();
  assert.deepEqual(
    await portal.portal.ctx.db.selectFrom('idempotency_records').selectAll().execute(),
    [],
    'deleted by the first full pass after 24 hours',
  );
  const later = await portal.post('/create', alice, withKey('daily'));
  assert.equal(later.status, 200);
  assert.notEqual(later.text, first.text);
  assert.equal(await configurationCount(portal), 2);
});

test('the other POST calls answer a retry as the first time; a failed request keeps nothing, so its retry runs again', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  assert.equal((await portal.post('/create', alice)).status, 200);
  const destroy = (key?: string): Promise<ApiResponse> =>
    portal.post('/destroy', { user_id: 'alice' }, key === undefined ? {} : withKey(key));
  assert.equal((await destroy('leaver-alice')).status, 204);
  assert.equal(
    (await destroy('leaver-alice')).status,
    204,
    'the retry gets the first answer, not "user does not exist"',
  );
  assert.equal((await destroy()).status, 400, 'without the key it is a new request');

  // A create refused for a disabled user keeps nothing: once the user is enabled, the retry creates.
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  assert.equal((await portal.post('/disable_user', { user_id: 'bob' })).status, 204);
  const refused = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' }, withKey('bob-phone'));
  assert.equal(refused.status, 403);
  assert.equal((await portal.post('/enable_user', { user_id: 'bob' })).status, 204);
  const retried = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' }, withKey('bob-phone'));
  assert.equal(retried.status, 200, retried.text);
  assert.equal(await configurationCount(portal, 'bob'), 2);

  for (const bad of ['', 'with space', 'x'.repeat(256), 'naïve']) {
    const response = await portal.post('/create', alice, { 'idempotency-key': bad });
    assert.equal(response.status, 400, JSON.stringify(bad));
    assert.equal(errorBody(response.text), 'invalid "Idempotency-Key" header: 1 to 255 visible ASCII characters');
  }
});

test('a kept answer belongs to the key that made it and its rotations, never to a new key that reuses the name', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const wireGuardFile = { accept: 'application/x-wireguard-profile' };
  const send = (key: string, idempotencyKey: string, form = alice) =>
    portal.post('/create', form, { ...bearer(key), ...wireGuardFile, ...withKey(idempotencyKey) });

  const first = await makeAdminKey(portal, 'mdm1', { scope: 'write' });
  const kept = await send(first, 'idem-1');
  assert.equal(kept.status, 200, kept.text);
  assert.match(kept.text, /^PrivateKey = /m);
  assert.equal((await send(first, 'idem-1')).text, kept.text, 'a retry with the same key gets the first file');

  // Revoked, then a new key made with the same name: a new lineage, which never sees the old answer.
  await revokeAdminKey(ctx, 'mdm1');
  const second = await makeAdminKey(portal, 'mdm1', { scope: 'write' });
  const fresh = await send(second, 'idem-1');
  assert.equal(fresh.status, 200, fresh.text);
  assert.notEqual(fresh.text, kept.text, "not the first key's file");
  assert.notEqual(/^PrivateKey = (.+)$/m.exec(fresh.text)?.[1], /^PrivateKey = (.+)$/m.exec(kept.text)?.[1]);
  assert.equal(await configurationCount(portal), 2, "the new key's request ran");

  // The same name limited to another profile gets neither file: the profile check comes first.
  await revokeAdminKey(ctx, 'mdm1');
  const limited = await makeAdminKey(portal, 'mdm1', { scope: 'write', profiles: ['guests'] });
  const refused = await send(limited, 'idem-1');
  assert.equal(refused.status, 403, refused.text);
  assert.equal(errorBody(refused.text), 'key "mdm1" may not use profile "employees" (it is limited to: guests)');
  assert.equal(await configurationCount(portal), 2);

  // A rotated key is the same lineage: it (and the old key in its grace period) gets the answer.
  const rotating = await makeAdminKey(portal, 'mdm2', { scope: 'write' });
  const before = await send(rotating, 'idem-2');
  assert.equal(before.status, 200, before.text);
  const rotated = await rotateAdminKey(ctx, 'mdm2', 'PT1H');
  assert.equal((await send(rotated.token, 'idem-2')).text, before.text, 'the rotated key gets the answer');
  const rotatedAgain = await rotateAdminKey(ctx, 'mdm2', 'PT1H');
  assert.equal((await send(rotatedAgain.token, 'idem-2')).text, before.text, 'and the key rotated from that one');
  assert.equal((await send(rotating, 'idem-2')).text, before.text, 'the old key within its grace period too');
  assert.equal(await configurationCount(portal), 3);

  // The secret is a lineage of its own, and so is a key named like it would be stored.
  const bySecret = await portal.post('/create', alice, { ...wireGuardFile, ...withKey('idem-2') });
  assert.equal(bySecret.status, 200);
  assert.notEqual(bySecret.text, before.text);
  assert.equal(await configurationCount(portal), 4);
});

const openVpnProfile = {
  profileId: 'staff',
  displayName: 'Staff',
  hostName: 'vpn.example.org',
  oRangeFour: '10.60.0.0/24',
  oRangeSix: 'fd60::/64',
  nodeUrl: UNREACHABLE_NODE,
};
const REVOKED =
  /^the configuration Idempotency-Key "[^"]+" created has been revoked \(deleted, expired, or its user disabled\); its answer is not given again: send a new Idempotency-Key for a new configuration$/;

/** The kept answers as stored: state and whether an answer is still there, by Idempotency-Key. */
async function keptAnswers(portal: TestPortal): Promise<Record<string, string>> {
  const rows = await portal.portal.ctx.db
    .selectFrom('idempotency_records')
    .select(['idempotency_key', 'state', 'answer'])
    .orderBy('idempotency_key')
    .execute();
  return Object.fromEntries(
    rows.map((row) => [row.idempotency_key, `${row.state}${row.answer === null ? '' : ' with answer'}`]),
  );
}

function assertRevokedAnswer(response: ApiResponse, what: string): void {
  assert.equal(response.status, 410, `${what}: ${response.text}`);
  assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8', what);
  assert.match(errorBody(response.text), REVOKED, what);
}

test('a retry after the configuration its key created was deleted or its user destroyed is a 410, creates nothing, and its answer is dropped', async (t) => {
  const portal = await startTestPortal({ config: { ProfileList: [employeesProfile, openVpnProfile] } });
  t.after(() => portal.close());
  const openVpn = { accept: 'application/x-openvpn-profile' };
  const bob = { user_id: 'bob', profile_id: 'staff' };
  const created = {
    wg: await portal.post('/create', alice, withKey('alice-wg')),
    ovpn: await portal.post('/create', bob, withKey('bob-ovpn', openVpn)),
    kept: await portal.post('/create', alice, withKey('alice-kept')),
  };
  for (const [name, answer] of Object.entries(created)) assert.equal(answer.status, 200, `${name}: ${answer.text}`);

  // delete_connection of alice's first configuration: its answer is dropped in that change, the other stays.
  const deleted = wireGuardPublicKey(asWireGuardKey(/^PrivateKey = (.+)$/m.exec(created.wg.text)?.[1] ?? ''));
  assert.equal((await portal.post('/delete_connection', { user_id: 'alice', connection_id: deleted })).status, 204);
  assert.deepEqual(await keptAnswers(portal), {
    'alice-kept': 'done with answer',
    'alice-wg': 'revoked',
    'bob-ovpn': 'done with answer',
  });
  assertRevokedAnswer(await portal.post('/create', alice, withKey('alice-wg')), 'WireGuard, deleted');
  assert.equal((await portal.post('/create', alice, withKey('alice-kept'))).text, created.kept.text, 'the other stays');

  // destroy of bob: the OpenVPN file (certificate and client key) is not given again either.
  assert.equal((await portal.post('/destroy', bob)).status, 204);
  assertRevokedAnswer(await portal.post('/create', bob, withKey('bob-ovpn', openVpn)), 'OpenVPN, user destroyed');
  assertRevokedAnswer(await portal.post('/create', bob, withKey('bob-ovpn', openVpn)), 'and again');
  assert.deepEqual(await portal.admin.users(), ['alice'], 'bob was not made again');
  assert.equal(await configurationCount(portal), 1, "only alice's kept configuration");
  assert.equal((await keptAnswers(portal))['bob-ovpn'], 'revoked');
  // Other parameters with the key are still another request (422), not a way around the refusal.
  assert.equal((await portal.post('/create', { ...alice, display_name: 'x' }, withKey('alice-wg'))).status, 422);
  const refusals = (await auditLog(portal)).filter((row) => row.status === 410);
  assert.equal(refusals.length, 3, 'each refused retry is in the audit log');
  assert.match(refusals[0]?.detail ?? '', REVOKED);
});

test('a retry after disable_user is a 410, and stays one after enable_user brings the configuration back', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const first = await portal.post('/create', alice, withKey('alice-phone'));
  assert.equal(first.status, 200, first.text);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.deepEqual(await keptAnswers(portal), { 'alice-phone': 'revoked' }, 'dropped by the disable itself');
  assertRevokedAnswer(await portal.post('/create', alice, withKey('alice-phone')), 'disabled');
  assert.equal((await portal.post('/enable_user', { user_id: 'alice' })).status, 204);
  assertRevokedAnswer(await portal.post('/create', alice, withKey('alice-phone')), 'enabled again');
  assert.equal(await configurationCount(portal), 1, 'nothing created; the first configuration is back');
  const fresh = await portal.post('/create', alice, withKey('alice-phone-2'));
  assert.equal(fresh.status, 200, 'a new key makes a new configuration');
  assert.equal(await configurationCount(portal), 2);
});

test('a retry after the configuration expired is a 410 before the reconcile pass deletes it, and after', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const short = { ...alice, expires_in: 'PT12H' };
  const first = await portal.post('/create', short, withKey('short-lived'));
  const second = await portal.post('/create', short, withKey('swept'));
  assert.equal(first.status, 200, first.text);
  assert.equal(second.status, 200, second.text);
  clock.advance(11 * HOUR);
  assert.equal((await portal.post('/create', short, withKey('short-lived'))).text, first.text, 'before it expires');
  clock.advance(2 * HOUR);
  // Nothing is written when a configuration expires: the retry reads its expiry, and drops the answer.
  assertRevokedAnswer(await portal.post('/create', short, withKey('short-lived')), 'expired, not swept');
  assert.deepEqual(await keptAnswers(portal), { 'short-lived': 'revoked', swept: 'done with answer' });
  await portal.portal.reconcileNow();
  assert.deepEqual(
    await keptAnswers(portal),
    { 'short-lived': 'revoked', swept: 'revoked' },
    'dropped by the pass that deleted it',
  );
  assertRevokedAnswer(await portal.post('/create', short, withKey('swept')), 'expired and swept');
  assert.equal(await configurationCount(portal), 0, 'nothing created');
});

test('a configuration deleted where no change announced it (by hand in the database) is refused as well', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const first = await portal.post('/create', alice, withKey('by-hand'));
  assert.equal(first.status, 200, first.text);
  const { db } = portal.portal.ctx;
  await db.deleteFrom('wg_peers').execute();
  assert.deepEqual(await keptAnswers(portal), { 'by-hand': 'done with answer' }, 'no listener heard of it');
  assertRevokedAnswer(await portal.post('/create', alice, withKey('by-hand')), 'read from the configuration');
  assert.deepEqual(await keptAnswers(portal), { 'by-hand': 'revoked' }, 'and dropped then');
  assert.equal(await db.selectFrom('wg_peers').select('public_key').executeTakeFirst(), undefined, 'nothing created');
});

test("a retry waiting for the request that holds its key is not sent away when the wall clock is set hours forward, and gets that request's answer", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const first = await portal.post('/create', alice, withKey('held'));
  assert.equal(first.status, 200, first.text);
  // The key held by a request still running (its state before the answer was kept).
  const { db } = portal.portal.ctx;
  const kept = await db
    .selectFrom('idempotency_records')
    .select(['state', 'status', 'answer'])
    .executeTakeFirstOrThrow();
  await db.updateTable('idempotency_records').set({ state: 'pending', status: null, answer: null }).execute();

  let answered = false;
  const retry = portal.post('/create', alice, withKey('held')).finally(() => {
    answered = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(answered, false, 'the retry waits for the request that holds the key');
  // While it waits, the wall clock is set 3 hours forward (Date.now(), a test double).
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() + 3 * HOUR);
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(answered, false, 'the retry still waits after the step, well within its 30 s');

  await db.updateTable('idempotency_records').set(kept).execute();
  const answer = await retry;
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.text, first.text, 'the answer of the request that held the key');
});
