// The webhook outbox: every event a subscription asked for reaches a receiver on loopback,
// signed with the subscription's secret, once, with an id of its own — users, configurations
// (WireGuard and OpenVPN, deleted and expired), OpenVPN sessions through the Node API — and no
// body ever carries a private key or a configuration file. A change that rolled back is never
// announced; a subscription gets only the types it asked for.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { deleteExpiredConfigurations } from '../../src/core/reconcile/pass.js';
import { WEBHOOK_HEADERS } from '../../src/protocol/webhooks.js';
import { asNodeNumber, type WireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { shiftedClock } from '../support/shifted-clock.js';
import { employeesProfile } from '../support/admin-keys.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../support/test-portal.js';
import { verifyWebhookSignature, WebhookReceiver } from '../support/webhook-receiver.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const OPENVPN = 'application/x-openvpn-profile';

const profiles: Partial<PortalConfigFile> = {
  ProfileList: [
    employeesProfile,
    {
      profileId: 'tiny',
      displayName: 'One address',
      hostName: 'vpn.example.org',
      wRangeFour: '10.45.0.0/30',
      wRangeSix: 'fd45::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
    {
      profileId: 'staff',
      displayName: 'Staff',
      hostName: 'vpn.example.org',
      oRangeFour: '10.60.0.0/24',
      oRangeSix: 'fd60::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
  ],
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
};

async function nodeApi(portal: TestPortal, call: string, form: Record<string, string>): Promise<string> {
  const nodeSecret = portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? '';
  const response = await portal.request(`${portal.nodeApiUrl}/${call}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${nodeSecret}`, 'x-node-number': '0' },
    body: new URLSearchParams(form),
  });
  return `${response.status} ${response.text}`;
}

/** A portal on a clock the test moves, and a receiver that checks signatures by that clock. */
async function portalWithReceiver(t: TestContext): Promise<{
  clock: ReturnType<typeof shiftedClock>;
  portal: TestPortal;
  receiver: WebhookReceiver;
}> {
  const clock = shiftedClock();
  const portal = await startTestPortal({ config: profiles, clock });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start(
    () => 200,
    () => clock.now().getTime(),
  );
  t.after(() => receiver.close());
  return { clock, portal, receiver };
}

test('a receiver on loopback gets every event of users, configurations and sessions, signed, once each, in order, and never a private key or a file', async (t) => {
  const { clock, portal, receiver } = await portalWithReceiver(t);
  const { webhook, secret } = await portal.admin.createWebhook({
    url: receiver.url,
    event_types: '*',
    description: 'helpdesk',
  });

  // The test portal's nodes never answer: a node.down may come at any moment (its own test is
  // test/e2e/webhook-node-events.test.ts), and the revocations' receipts go overdue once the
  // clock moved (their own test is test/core/revocations/receipts.test.ts).
  const isAside = (type: string) => type.startsWith('node.') || type.startsWith('revocation.');
  const laptop = await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const laptopKey = parseWireGuardFile(laptop.body).interface.get('PrivateKey') ?? '';
  const laptopId = wireGuardPublicKey(laptopKey as WireGuardKey);
  const certificate = await portal.admin.create({ user_id: 'frank', profile_id: 'staff' }, OPENVPN);
  const [openVpn] = await portal.admin.userConfigurationList('frank');
  assert.ok(openVpn !== undefined);
  const session = {
    profile_id: 'staff',
    common_name: openVpn.connection_id,
    ip_four: '10.60.0.2',
    ip_six: 'fd60::1000',
  };
  assert.equal(await nodeApi(portal, 'connect', { ...session, originating_ip: '192.0.2.7' }), '200 OK');
  assert.equal(await nodeApi(portal, 'disconnect', { ...session, bytes_in: '1234', bytes_out: '4321' }), '200 OK');
  await portal.admin.disableUser('alice');
  await portal.admin.enableUser('alice');
  await portal.admin.deleteConnection('alice', laptopId);
  const phone = await portal.admin.create({ user_id: 'alice', profile_id: 'employees', expires_in: 'PT12H' });
  const phoneKey = parseWireGuardFile(phone.body).interface.get('PrivateKey') ?? '';
  // Delivered before the clock moves: each signature's time is then its arrival's, by one clock.
  // Counted without the node's and the receipts' events, which may come in between.
  await receiver.waitFor(
    (received) => received.filter((webhook) => !isAside(webhook.payload.type)).length >= 10,
    'the events before the expiry',
  );
  clock.advance(13 * 3600_000);
  assert.equal(await deleteExpiredConfigurations(portal.portal.ctx), 1);
  await portal.admin.destroy('frank');

  const expected = [
    'user.created',
    'configuration.created',
    'user.created',
    'configuration.created',
    'session.started',
    'session.ended',
    'user.disabled',
    'user.enabled',
    'configuration.deleted',
    'configuration.created',
    'configuration.expired',
    'configuration.deleted',
    'user.destroyed',
  ];
  await receiver.waitForCount(expected.length, 'every event');
  // Nothing more comes: each event was delivered once.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const relevant = receiver.received.filter((received) => !isAside(received.payload.type));
  assert.deepEqual(
    relevant.map((received) => received.payload.type),
    expected,
    'every event, once, in the order it happened',
  );

  const ids = new Set<string>();
  for (const received of receiver.received) {
    const signature = String(received.headers[WEBHOOK_HEADERS.signature.toLowerCase()]);
    assert.match(signature, /^t=\d+,v1=[0-9a-f]{64}$/);
    // Checked at its arrival, by the portal's clock (moved 13 hours on half-way).
    const sentAt = Number(/^t=(\d+)/.exec(signature)?.[1]);
    const arrivedAt = Math.floor(received.arrivedAt / 1000);
    assert.ok(Math.abs(arrivedAt - sentAt) <= 2, `${received.payload.type}: signed when sent`);
    assert.ok(
      verifyWebhookSignature(signature, received.body, secret, sentAt + 1),
      `${received.payload.type}: the signature verifies`,
    );
    assert.equal(
      verifyWebhookSignature(signature, received.body, secret, sentAt + 301),
      false,
      'a replay more than 5 minutes later is refused',
    );
    assert.equal(
      verifyWebhookSignature(signature, `${received.body} `, secret, sentAt),
      false,
      'a changed body does not verify',
    );
    assert.equal(
      verifyWebhookSignature(signature, received.body, `${secret}x`, sentAt),
      false,
      'another secret does not verify',
    );
    assert.equal(received.headers[WEBHOOK_HEADERS.eventId.toLowerCase()], received.payload.id);
    assert.equal(received.headers[WEBHOOK_HEADERS.eventType.toLowerCase()], received.payload.type);
    assert.equal(received.headers[WEBHOOK_HEADERS.attempt.toLowerCase()], '1');
    assert.equal(received.headers['content-type'], 'application/json');
    assert.match(received.payload.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    ids.add(received.payload.id);
  }
  assert.equal(ids.size, receiver.received.length, 'each event has its own id');

  const [, created, , , started, ended] = relevant.map((received) => received.payload);
  assert.deepEqual(created?.data, {
    user_id: 'alice',
    profile_id: 'employees',
    connection_id: laptopId,
    vpn_proto: 'wireguard',
    node_number: 0,
    expires_at: laptop.expiresAt.toISOString().replace(/\.000Z$/, '+00:00'),
  });
  assert.deepEqual(started?.data, {
    user_id: 'frank',
    profile_id: 'staff',
    connection_id: openVpn.connection_id,
    vpn_proto: 'openvpn',
    node_number: 0,
    ip_four: '10.60.0.2',
    ip_six: 'fd60::1000',
    originating_ip: '192.0.2.7',
  });
  assert.equal(ended?.type === 'session.ended' ? ended.data.bytes_in : null, 1234);

  const everything = receiver.received.map((received) => received.body).join('\n');
  const openVpnKey = /<key>\n([\s\S]*?)<\/key>/.exec(certificate.body)?.[1] ?? '';
  assert.ok(
    laptopKey.length === 44 && phoneKey.length === 44 && openVpnKey.includes('PRIVATE KEY'),
    'the keys to look for were found',
  );
  for (const forbidden of [
    laptopKey,
    phoneKey,
    openVpnKey.split('\n')[1] ?? '',
    'PRIVATE KEY',
    'PrivateKey',
    '[Interface]',
    '<ca>',
    secret,
  ]) {
    assert.equal(everything.includes(forbidden), false, `never in a webhook body: ${forbidden.slice(0, 12)}…`);
  }

  // The delivery log has each as delivered at its first attempt.
  const log = await portal.admin.webhookDeliveries({ webhook_id: webhook.webhook_id });
  assert.equal(log.webhook_deliveries.filter((entry) => !isAside(entry.event_type)).length, expected.length);
  assert.deepEqual(
    new Set(
      log.webhook_deliveries.map(
        (entry) => `${entry.state} ${entry.attempts.map((attempt) => `${attempt.outcome} ${attempt.status}`)}`,
      ),
    ),
    new Set(['delivered delivered 200']),
  );
});

test('a subscription gets only the types it asked for, and a change that rolled back is never announced', async (t) => {
  const portal = await startTestPortal({ config: profiles });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const everything = await WebhookReceiver.start();
  t.after(() => everything.close());
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.disabled,user.destroyed' });
  // Every type but node.*: the test portal's nodes never answer, and a node.down may come at any moment.
  await portal.admin.createWebhook({
    url: everything.url,
    event_types: 'user.created,user.disabled,user.destroyed,configuration.created,configuration.deleted',
  });

  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  await portal.admin.disableUser('bob');
  // Refused: bob is disabled. Its transaction made nothing, so nothing is announced.
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 403);
  // Refused after the new user was made in the transaction: no address left rolls carol back,
  // and with her the user.created the transaction had announced.
  await portal.admin.create({ user_id: 'dave', profile_id: 'tiny' });
  const full = await portal.post('/create', { user_id: 'carol', profile_id: 'tiny' });
  assert.equal(full.status, 503, full.text);
  assert.equal((await portal.admin.users()).includes('carol'), false, 'carol was rolled back');
  await portal.admin.destroy('bob');

  await receiver.waitForCount(2, 'the two types asked for');
  await everything.waitForCount(7, 'every event');
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.deepEqual(receiver.types(), ['user.disabled', 'user.destroyed']);
  assert.deepEqual(everything.types(), [
    'user.created',
    'configuration.created',
    'user.disabled',
    'user.created',
    'configuration.created',
    'configuration.deleted',
    'user.destroyed',
  ]);
  assert.deepEqual(
    everything.received.map((received) => ('user_id' in received.payload.data ? received.payload.data.user_id : null)),
    ['bob', 'bob', 'bob', 'dave', 'dave', 'bob', 'bob'],
    'nothing about carol',
  );
  assert.deepEqual(
    receiver.received.map((received) => received.payload.id),
    [everything.received[2]?.payload.id, everything.received[6]?.payload.id],
    'two subscriptions see the same id for the same event',
  );
});

test('configuration.expiring, announced by the expiry warning pass a week before the expiry, reaches the receiver with the configuration and its expiry', async (t) => {
  const { clock, portal, receiver } = await portalWithReceiver(t);
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'configuration.expiring' });
  const created = await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const connectionId = wireGuardPublicKey(
    (parseWireGuardFile(created.body).interface.get('PrivateKey') ?? '') as WireGuardKey,
  );

  // Eight days before the expiry: nothing yet. Six days before (expiryWarning is P7D): the pass announces it.
  clock.advance(created.expiresAt.getTime() - 8 * 86_400_000 - clock.now().getTime());
  await portal.reconcile();
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver.received.length, 0, 'not announced before expiryWarning');
  clock.advance(2 * 86_400_000);
  await portal.reconcile();
  await receiver.waitForCount(1, 'configuration.expiring');
  assert.equal(receiver.received[0]?.payload.type, 'configuration.expiring');
  assert.deepEqual(receiver.received[0]?.payload.data, {
    user_id: 'alice',
    profile_id: 'employees',
    connection_id: connectionId,
    vpn_proto: 'wireguard',
    node_number: 0,
    expires_at: created.expiresAt.toISOString().replace(/\.000Z$/, '+00:00'),
  });
  await portal.reconcile();
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver.received.length, 1, 'announced once');
});
