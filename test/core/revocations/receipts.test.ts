// Revocation receipts with a node that never answers (the test portal's node): a receipt stays
// pending, goes overdue once past revocationDeadline (announced once to webhooks), is listed by
// state=pending, counted by the metrics, superseded by enable_user, made by expiry too, and kept
// as long as audit rows. A node that answers, and one that hangs and thaws, are the tunnel
// lab's (test/e2e/revocation-receipts.test.ts).
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { deleteExpiredConfigurations } from '../../../src/core/reconcile/pass.js';
import { REVOCATION_HEADER, type RevocationInfo } from '../../../src/protocol/admin-api.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

async function portalWithReceiver(
  t: TestContext,
  config: Partial<PortalConfigFile>,
  clock?: ReturnType<typeof shiftedClock>,
): Promise<{ portal: TestPortal; receiver: WebhookReceiver }> {
  const portal = await startTestPortal({
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] }, ...config },
    ...(clock === undefined ? {} : { clock }),
  });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'revocation.applied,revocation.overdue' });
  return { portal, receiver };
}

async function createWireGuard(portal: TestPortal, userId: string, expiresIn?: string): Promise<string> {
  const created = await portal.admin.create({
    user_id: userId,
    profile_id: 'employees',
    ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
  });
  return wireGuardPublicKey(parseWireGuardFile(created.body).interface.get('PrivateKey') as WireGuardKey);
}

async function metric(portal: TestPortal, name: string): Promise<number> {
  const text = await (await fetch(portal.portal.metricsUrl ?? '')).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  assert.ok(line !== undefined, `${name} is exported`);
  return Number(line.slice(name.length + 1));
}

test('a disable_user whose node does not answer gives a pending receipt, overdue once past revocationDeadline and announced once; state=pending lists it; the metrics count it', async (t) => {
  const { portal, receiver } = await portalWithReceiver(t, { revocationDeadline: 'PT1S' });
  const key = await createWireGuard(portal, 'alice');

  const disabled = await portal.post('/disable_user', { user_id: 'alice' });
  assert.equal(disabled.status, 204);
  const revocationId = disabled.headers.get(REVOCATION_HEADER) ?? '';
  assert.match(revocationId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/, 'the answer names its receipt');
  const receipt = await portal.admin.revocation(revocationId);
  assert.deepEqual(
    { ...receipt, requested_at: '' },
    {
      revocation_id: revocationId,
      user_id: 'alice',
      reason: 'disable_user',
      state: 'pending',
      requested_at: '',
      overdue_at: null,
      applied_at: null,
      superseded_at: null,
      connection_ids: [key],
      nodes: [{ node_number: 0, state: 'pending', applied_at: null, connection_ids: [key] }],
    },
  );
  assert.equal(await metric(portal, 'vpn_portal_revocations_pending'), 1);
  assert.ok((await metric(portal, 'vpn_portal_revocation_oldest_pending_seconds')) >= 0);

  await receiver.waitForCount(1, 'the overdue event', 10_000);
  const [overdue] = receiver.received;
  assert.equal(overdue?.payload.type, 'revocation.overdue');
  assert.deepEqual(overdue?.payload.data, {
    revocation_id: revocationId,
    user_id: 'alice',
    connection_ids: [key],
    nodes: [{ node_number: 0, state: 'pending', applied_at: null }],
  });
  const late = await portal.admin.revocation(revocationId);
  assert.equal(late.state, 'overdue');
  assert.ok(late.overdue_at !== null && late.overdue_at >= receipt.requested_at);
  assert.equal(
    await metric(portal, 'vpn_portal_revocations_pending'),
    1,
    'an overdue receipt is still pending on a node',
  );
  assert.ok((await metric(portal, 'vpn_portal_revocation_oldest_pending_seconds')) >= 1);

  // A user without configurations: nothing to wait for, applied at once.
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  const bobKey = (await portal.admin.userConfigurationList('bob'))[0]?.connection_id ?? '';
  const bobReceipt = (await portal.admin.deleteConnection('bob', bobKey)) ?? '';
  const emptyReceipt = (await portal.admin.disableUser('bob')) ?? '';
  assert.equal(
    (await portal.admin.revocation(emptyReceipt)).state,
    'applied',
    'no configuration left: applied at once',
  );
  const ids = (receipts: readonly RevocationInfo[]) => receipts.map((entry) => entry.revocation_id);
  assert.deepEqual(
    ids(await portal.admin.revocations({ state: 'pending' })),
    [bobReceipt, revocationId],
    'pending lists pending and overdue, newest first',
  );
  assert.deepEqual(ids(await portal.admin.revocations({ state: 'overdue' })), [revocationId]);
  assert.deepEqual(ids(await portal.admin.revocations({ state: 'applied' })), [emptyReceipt]);
  assert.deepEqual(ids(await portal.admin.revocations({ user_id: 'alice' })), [revocationId]);
  const bad = await portal.get('/revocations', { state: 'done' });
  assert.deepEqual([bad.status, bad.json()], [400, { error: 'invalid value for "state"' }]);
  const unknown = await portal.get('/revocation', { revocation_id: '01937f6e-0000-7000-8000-000000000000' });
  assert.equal(unknown.status, 404);

  await receiver.waitFor(
    (received) => received.length >= 3,
    'the applied event of the empty receipt and the overdue one of bob',
  );
  await sleep(1_500);
  const overdueOf = (id: string) =>
    receiver.received.filter(
      (hook) => hook.payload.type === 'revocation.overdue' && hook.payload.data.revocation_id === id,
    );
  assert.equal(overdueOf(revocationId).length, 1, 'announced once');
  assert.ok(
    receiver.received.some(
      (hook) => hook.payload.type === 'revocation.applied' && hook.payload.data.revocation_id === emptyReceipt,
    ),
  );
});

test('an enable_user before every node confirmed leaves the receipt superseded, no longer pending', async (t) => {
  const { portal } = await portalWithReceiver(t, {});
  await createWireGuard(portal, 'alice');
  const revocationId = (await portal.admin.disableUser('alice')) ?? '';
  assert.equal((await portal.admin.revocation(revocationId)).state, 'pending');
  await portal.admin.enableUser('alice');
  const receipt = await portal.admin.revocation(revocationId);
  assert.equal(receipt.state, 'superseded');
  assert.ok(receipt.superseded_at !== null);
  assert.deepEqual(await portal.admin.revocations({ state: 'pending' }), []);
  assert.equal(await metric(portal, 'vpn_portal_revocations_pending'), 0);
  assert.equal(await metric(portal, 'vpn_portal_revocation_oldest_pending_seconds'), 0);
  // The next disable makes a new receipt, pending again.
  const again = (await portal.admin.disableUser('alice')) ?? '';
  assert.notEqual(again, revocationId);
  assert.equal((await portal.admin.revocation(again)).state, 'pending');
  // A deleted configuration does not come back with enable_user: its receipt still waits for the node.
  await portal.admin.enableUser('alice');
  const other = await createWireGuard(portal, 'alice');
  const deletion = (await portal.admin.deleteConnection('alice', other)) ?? '';
  await portal.admin.disableUser('alice');
  await portal.admin.enableUser('alice');
  assert.equal((await portal.admin.revocation(deletion)).state, 'pending');
});

test('destroy and delete_connection answer their receipt; expiry makes one per user', async (t) => {
  const clock = shiftedClock();
  const { portal } = await portalWithReceiver(t, {}, clock);
  const first = await createWireGuard(portal, 'alice');
  const second = await createWireGuard(portal, 'alice');
  const deleted = await portal.post('/delete_connection', { user_id: 'alice', connection_id: first });
  const deletion = await portal.admin.revocation(deleted.headers.get(REVOCATION_HEADER) ?? '');
  assert.deepEqual([deletion.reason, deletion.connection_ids], ['delete_connection', [first]]);
  const nothing = await portal.post('/delete_connection', { user_id: 'alice', connection_id: first });
  assert.deepEqual(
    [nothing.status, nothing.headers.get(REVOCATION_HEADER)],
    [204, null],
    'nothing deleted, no receipt',
  );
  const destroyed = await portal.post('/destroy', { user_id: 'alice' });
  const destruction = await portal.admin.revocation(destroyed.headers.get(REVOCATION_HEADER) ?? '');
  assert.deepEqual(
    [destruction.reason, destruction.user_id, destruction.connection_ids],
    ['destroy', 'alice', [second]],
  );

  const bobKey = await createWireGuard(portal, 'bob', 'PT12H');
  const carolKey = await createWireGuard(portal, 'carol', 'PT12H');
  clock.advance(13 * 3600_000);
  assert.equal(await deleteExpiredConfigurations(portal.portal.ctx), 2);
  const expired = (await portal.admin.revocations()).filter((receipt) => receipt.reason === 'expiry');
  assert.deepEqual(
    expired
      .map((receipt) => [receipt.user_id, receipt.connection_ids, receipt.nodes.map((node) => node.node_number)])
      .sort(),
    [
      ['bob', [bobKey], [0]],
      ['carol', [carolKey], [0]],
    ],
  );
});

test('the housekeeping deletes finished receipts older than auditLogRetention and keeps open ones', async (t) => {
  const clock = shiftedClock();
  const { portal } = await portalWithReceiver(t, { auditLogRetention: 'P1D' }, clock);
  await createWireGuard(portal, 'alice');
  const open = (await portal.admin.disableUser('alice')) ?? '';
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  await portal.admin.destroy('bob');
  const bobDestroyed = (await portal.admin.revocations({ user_id: 'bob' }))[0]?.revocation_id ?? '';
  await portal.admin.create({ user_id: 'carol', profile_id: 'employees' });
  const carolDisabled = (await portal.admin.disableUser('carol')) ?? '';
  await portal.admin.enableUser('carol');
  assert.equal((await portal.admin.revocation(carolDisabled)).state, 'superseded');
  await portal.reconcile();

  clock.advance(3 * 86_400_000);
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  assert.equal(result?.revocationsDeleted, 1, 'the superseded receipt is gone');
  const left = (await portal.admin.revocations()).map((receipt) => receipt.revocation_id).sort();
  assert.deepEqual(left, [open, bobDestroyed].sort(), 'the receipts still waiting for a node stay');
  assert.equal((await portal.get('/revocation', { revocation_id: carolDisabled })).status, 404);
});
