// Kept answers that hand out a secret (Idempotency-Key) are given again only while what they
// handed out holds: an admin key made by create_admin_key until it is revoked, rotated or
// expires; a webhook's secret until its subscription is deleted or the secret rotated; an
// enrollment token until it is revoked, used up or expires; an OpenVPN file until extend
// re-issues its certificate (a WireGuard file stays). Then a retry answers 410 saying why, makes
// nothing, and the answer is dropped, also when no change announced the end (by hand, an expiry)
// or when it came between a call's change and the keeping of its answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { rotateAdminKey } from '../../../src/core/access/admin-keys.js';
import { deleteWebhookSubscription } from '../../../src/core/webhooks/index.js';
import { IdempotentCalls } from '../../../src/http/admin-api/idempotency.js';
import { unlinkedKeptAnswers } from '../../../src/storage/migrations/0042-unlinked-kept-answers.js';
import { auditLog, ManualClock } from '../../support/admin-keys.js';
import { BOTH_PROTOCOLS_PROFILE, opensslCsr, wgGenkey } from '../../support/device-keys.js';
import { createWebhookRaced } from '../../support/raced-webhook.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';

const HOUR = 3_600_000;
const WIREGUARD = 'application/x-wireguard-profile';
const OPENVPN = 'application/x-openvpn-profile';
const config: Partial<PortalConfigFile> = {
  ProfileList: [BOTH_PROTOCOLS_PROFILE],
  enrollment: { requestsPerMinute: 10_000 },
};
const withKey = (key: string, headers: Record<string, string> = {}) => ({ 'idempotency-key': key, ...headers });

async function startPortal(t: { after: (fn: () => Promise<void>) => void }, clock?: ManualClock): Promise<TestPortal> {
  const portal = await startTestPortal({ config, ...(clock === undefined ? {} : { clock }) });
  t.after(() => portal.close());
  return portal;
}

/** The kept answers as stored: state, whether an answer is still there, and what it handed out, by Idempotency-Key. */
async function keptAnswers(portal: TestPortal): Promise<Record<string, string>> {
  const rows = await portal.portal.ctx.db
    .selectFrom('idempotency_records')
    .select(['idempotency_key', 'state', 'answer', 'handed_out_kind'])
    .orderBy('idempotency_key')
    .execute();
  return Object.fromEntries(
    rows.map((row) => [
      row.idempotency_key,
      `${row.handed_out_kind ?? 'nothing'} ${row.state}${row.answer === null ? '' : ' with answer'}`,
    ]),
  );
}

async function rowCount(
  portal: TestPortal,
  table: 'admin_keys' | 'webhooks' | 'enrollment_tokens' | 'certificates',
): Promise<number> {
  return (await portal.portal.ctx.db.selectFrom(table).selectAll().execute()).length;
}

function assertGone(response: ApiResponse, message: RegExp, what: string): void {
  assert.equal(response.status, 410, `${what}: ${response.text}`);
  assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8', what);
  assert.match(errorBody(response.text), message, what);
}

const gone = (what: string, why: string, instead: string) =>
  new RegExp(
    `^${what} Idempotency-Key "[^"]+" ${why.replace(/[()]/g, '\\$&')}; its answer is not given again: send a new Idempotency-Key for ${instead}$`,
  );

test('create_admin_key: a retry gets the same secret while the key is current; revoked, rotated or expired it is a 410 and no key is made', async (t) => {
  const clock = new ManualClock();
  const portal = await startPortal(t, clock);
  const made = await portal.post('/create_admin_key', { name: 'mdm', scope: 'write' }, withKey('mdm-key'));
  assert.equal(made.status, 200, made.text);
  assert.equal(
    (await portal.post('/create_admin_key', { name: 'mdm', scope: 'write' }, withKey('mdm-key'))).text,
    made.text,
  );

  assert.equal((await portal.post('/revoke_admin_key', { name: 'mdm' })).status, 200);
  assert.deepEqual(await keptAnswers(portal), { 'mdm-key': 'admin-key revoked' }, 'dropped by the revocation');
  const revoked = gone('the admin key', 'made has been revoked or has expired', 'a new key');
  assertGone(
    await portal.post('/create_admin_key', { name: 'mdm', scope: 'write' }, withKey('mdm-key')),
    revoked,
    'revoked',
  );

  const ci = await portal.post('/create_admin_key', { name: 'ci', scope: 'read' }, withKey('ci-key'));
  assert.equal(ci.status, 200, ci.text);
  await rotateAdminKey(portal.portal.ctx, 'ci', 'PT1H');
  assert.equal((await keptAnswers(portal))['ci-key'], 'admin-key replaced', 'dropped by the rotation');
  assertGone(
    await portal.post('/create_admin_key', { name: 'ci', scope: 'read' }, withKey('ci-key')),
    gone('the admin key', 'made has been rotated', 'a new key'),
    'rotated, in its grace period',
  );

  const shortLived = { name: 'short', scope: 'read', expires_in: 'PT1H' };
  assert.equal((await portal.post('/create_admin_key', shortLived, withKey('short-key'))).status, 200);
  clock.advance(2 * HOUR);
  // Nothing is written when a key expires: the retry reads it, and drops the answer.
  assertGone(await portal.post('/create_admin_key', shortLived, withKey('short-key')), revoked, 'expired');
  assert.equal((await keptAnswers(portal))['short-key'], 'admin-key revoked');
  assert.equal(await rowCount(portal, 'admin_keys'), 4, 'mdm, ci and its rotation, short: none made by a retry');
  assert.equal((await auditLog(portal)).filter((row) => row.status === 410).length, 3, 'each refusal is audited');
});

test('create_webhook and rotate_webhook_secret: a retry gets the secret while it is the current one; rotated or deleted it is a 410', async (t) => {
  const portal = await startPortal(t);
  const hook = { url: 'https://192.0.2.1/hooks', event_types: 'user.created' };
  const created = await portal.post('/create_webhook', hook, withKey('hook'));
  assert.equal(created.status, 200, created.text);
  assert.equal((await portal.post('/create_webhook', hook, withKey('hook'))).text, created.text);
  const { webhook_id } = (created.json() as { webhook: { webhook_id: string } }).webhook;

  const rotation = await portal.post('/rotate_webhook_secret', { webhook_id }, withKey('rotation'));
  assert.equal(rotation.status, 200, rotation.text);
  assert.deepEqual(await keptAnswers(portal), {
    hook: 'webhook-secret replaced',
    rotation: 'webhook-secret done with answer',
  });
  const replaced = gone('the webhook secret', 'handed out has been replaced by a rotation', 'a new one');
  assertGone(await portal.post('/create_webhook', hook, withKey('hook')), replaced, 'create, then rotated');
  assert.equal(
    (await portal.post('/rotate_webhook_secret', { webhook_id }, withKey('rotation'))).text,
    rotation.text,
    "the rotation's own answer holds its current secret",
  );
  assert.equal((await portal.post('/rotate_webhook_secret', { webhook_id })).status, 200);
  assertGone(
    await portal.post('/rotate_webhook_secret', { webhook_id }, withKey('rotation')),
    replaced,
    'rotated again',
  );

  const other = await portal.post('/create_webhook', hook, withKey('other'));
  assert.equal(other.status, 200, other.text);
  const otherId = (other.json() as { webhook: { webhook_id: string } }).webhook.webhook_id;
  assert.equal((await portal.post('/delete_webhook', { webhook_id: otherId })).status, 204);
  assert.equal((await keptAnswers(portal)).other, 'webhook-secret revoked', 'dropped by the deletion');
  assertGone(
    await portal.post('/create_webhook', hook, withKey('other')),
    gone('the webhook secret', 'handed out is gone with its subscription (deleted)', 'a new one'),
    'deleted',
  );

  // Deleted where no change announced it: the retry reads the subscription, and drops the answer.
  const byHand = await portal.post('/create_webhook', hook, withKey('by-hand'));
  const byHandId = (byHand.json() as { webhook: { webhook_id: string } }).webhook.webhook_id;
  await portal.portal.ctx.db.deleteFrom('webhooks').where('webhook_id', '=', byHandId).execute();
  assert.equal((await keptAnswers(portal))['by-hand'], 'webhook-secret done with answer');
  assert.equal((await portal.post('/create_webhook', hook, withKey('by-hand'))).status, 410);
  assert.equal((await keptAnswers(portal))['by-hand'], 'webhook-secret revoked');
  assert.equal(await rowCount(portal, 'webhooks'), 1, 'no retry made a subscription');
});

/** POST {baseUrl}enroll as a device sends it. */
function enroll(portal: TestPortal, token: string): Promise<ApiResponse> {
  return portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams({ enrollment_token: token, public_key: wgGenkey().publicKey }),
    headers: { accept: WIREGUARD },
  });
}

test('enrollment_token: a retry gets the token while it can be redeemed; used up, revoked or expired it is a 410 and no token is made', async (t) => {
  const clock = new ManualClock();
  const portal = await startPortal(t, clock);
  const once = { user_id: 'alice', profile_id: 'both' };
  const made = await portal.post('/enrollment_token', once, withKey('once'));
  assert.equal(made.status, 200, made.text);
  assert.equal((await portal.post('/enrollment_token', once, withKey('once'))).text, made.text);
  const twice = { ...once, uses: '2' };
  const madeTwice = await portal.post('/enrollment_token', twice, withKey('twice'));

  assert.equal((await enroll(portal, (made.json() as { enrollment_token: string }).enrollment_token)).status, 200);
  const second = (madeTwice.json() as { enrollment_token: string; token_id: string }).enrollment_token;
  assert.equal((await enroll(portal, second)).status, 200);
  assert.deepEqual(
    await keptAnswers(portal),
    { once: 'enrollment-token revoked', twice: 'enrollment-token done with answer' },
    'dropped by the redemption that took its last use, not by one that left a use',
  );
  const spent = gone(
    'the enrollment token',
    'made can no longer be redeemed (revoked, used up, expired, or its user disabled or destroyed)',
    'a new token',
  );
  assertGone(await portal.post('/enrollment_token', once, withKey('once')), spent, 'used up');
  assert.equal((await portal.post('/enrollment_token', twice, withKey('twice'))).text, madeTwice.text);

  const { token_id } = madeTwice.json() as { token_id: string };
  assert.equal((await portal.post('/revoke_enrollment_token', { user_id: 'alice', token_id })).status, 204);
  assert.equal((await keptAnswers(portal)).twice, 'enrollment-token revoked', 'dropped by the revocation');
  assertGone(await portal.post('/enrollment_token', twice, withKey('twice')), spent, 'revoked');

  const hour = { ...once, valid_for: 'PT1H' };
  assert.equal((await portal.post('/enrollment_token', hour, withKey('hour'))).status, 200);
  clock.advance(2 * HOUR);
  assertGone(await portal.post('/enrollment_token', hour, withKey('hour')), spent, 'expired');
  assert.equal((await keptAnswers(portal)).hour, 'enrollment-token revoked');
  assert.equal(await rowCount(portal, 'enrollment_tokens'), 3, 'no retry made a token');
});

test('extend drops the kept create answer of an OpenVPN configuration (its certificate is re-issued) but not a WireGuard one', async (t) => {
  const clock = new ManualClock();
  const portal = await startPortal(t, clock);
  const device = opensslCsr('P-256');
  const openVpn = { user_id: 'alice', profile_id: 'both', csr: device.csrPem, expires_in: 'PT12H' };
  const created = await portal.post('/create', openVpn, withKey('laptop', { accept: OPENVPN }));
  assert.equal(created.status, 200, created.text);
  const wireGuard = { user_id: 'alice', profile_id: 'both', public_key: wgGenkey().publicKey, expires_in: 'PT12H' };
  const phone = await portal.post('/create', wireGuard, withKey('phone', { accept: WIREGUARD }));
  assert.equal(phone.status, 200, phone.text);

  clock.advance(HOUR);
  for (const configuration of await portal.admin.userConfigurationList('alice'))
    await portal.admin.extend({ user_id: 'alice', connection_id: configuration.connection_id, expires_in: 'P90D' });
  assert.deepEqual(await keptAnswers(portal), {
    laptop: 'configuration replaced',
    phone: 'configuration done with answer',
  });
  assertGone(
    await portal.post('/create', openVpn, withKey('laptop', { accept: OPENVPN })),
    gone(
      'the configuration',
      "created was extended since: its certificate was re-issued (extend's answer holds the new one, the kept file the old one)",
      'a new configuration',
    ),
    'OpenVPN, extended',
  );
  const retry = await portal.post('/create', wireGuard, withKey('phone', { accept: WIREGUARD }));
  assert.equal(retry.text, phone.text, 'the WireGuard file is the same after extend: given again');
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 2, 'nothing made by a retry');
  assert.equal(await rowCount(portal, 'certificates'), 1);
});

test('an answer kept after its change is dropped at once when another change ended what it handed out in between', async (t) => {
  const portal = await startPortal(t);
  const { ctx } = portal.portal;
  const outcome = await createWebhookRaced(new IdempotentCalls(ctx), ctx, async (webhookId) => {
    // Its closing write finds no answer to drop: this request keeps its answer only after.
    await deleteWebhookSubscription(ctx, webhookId);
  });
  assert.equal(outcome.replayed, false);
  assert.deepEqual(await keptAnswers(portal), { raced: 'webhook-secret revoked' }, 'kept, read again, dropped');
});

test('an answer holding a secret kept before it named what it handed out is dropped on upgrade: a retry is a 410 saying so, and makes nothing', async (t) => {
  const portal = await startPortal(t);
  const { db } = portal.portal.ctx;
  const made = await portal.post('/create_admin_key', { name: 'mdm', scope: 'write' }, withKey('mdm-key'));
  assert.equal(made.status, 200, made.text);
  // As an earlier version kept it (no link), then the upgrade's migration 0042.
  await db.updateTable('idempotency_records').set({ handed_out_kind: null, handed_out_id: null }).execute();
  await unlinkedKeptAnswers.up(db as unknown as Kysely<unknown>);
  assert.deepEqual(await keptAnswers(portal), { 'mdm-key': 'nothing not-kept' }, 'the sealed secret is gone');
  const retry = await portal.post('/create_admin_key', { name: 'mdm', scope: 'write' }, withKey('mdm-key'));
  assertGone(
    retry,
    /^the answer to Idempotency-Key "mdm-key" was kept by an earlier portal version and not kept across the upgrade \(it held a secret that may have been revoked since\); it is not given again: /,
    'not kept across the upgrade',
  );
  assert.equal(await rowCount(portal, 'admin_keys'), 1, 'no key made by the retry');
});
