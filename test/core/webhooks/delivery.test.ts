// Delivering webhooks when receivers misbehave and portals die: a receiver that answers 500 or
// not at all is tried again with growing waits, with the same id and body, until it takes the
// event or retryFor is over (an event that waited that long behind a resting receiver is given
// up unsent); eight slow receivers with a backlog leave the next free slot to a receiver that
// waited; during a secret rotation every delivery carries both signatures;
// a target the address guard refuses gets nothing; a binary answer is recorded as text, and a
// 200 whose body never ends is delivered; a
// subscription whose secret cannot be opened is sent nothing and tried again later; and a
// portal killed with SIGKILL while a delivery is in flight delivers, once restarted, every
// event — the one in flight again, none that the receiver had acknowledged.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdminApiClient } from '../../../src/admin-client/admin-api-client.js';
import { generateSecrets } from '../../../src/cli/generate-secrets.js';
import { AnswerCipher } from '../../../src/keys/answer-cipher.js';
import { loadPortalConfig } from '../../../src/config/load.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { WEBHOOK_HEADERS } from '../../../src/protocol/webhooks.js';
import { connectDatabase } from '../../../src/storage/database.js';
import { ManualClock } from '../../support/admin-keys.js';
import { PortalProcess } from '../../support/portal-process.js';
import { createTestDatabase, dropTestDatabase } from '../../support/postgres.js';
import { defaultTestConfig, startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { verifyWebhookSignature, WebhookReceiver, type ReceivedWebhook } from '../../support/webhook-receiver.js';

const allowLoopback: Partial<PortalConfigFile> = {
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'], timeout: 'PT1S', retryFor: 'P1D' },
};

const header = (received: ReceivedWebhook | undefined, name: string): string =>
  String(received?.headers[name.toLowerCase()]);

/** Waits a little longer than the worker's poll and asserts nothing more arrived. */
async function nothingMore(receiver: WebhookReceiver, count: number, why: string): Promise<void> {
  await sleep(1_500);
  assert.equal(receiver.received.length, count, why);
}

async function onlyDelivery(portal: TestPortal) {
  const { webhook_deliveries: deliveries } = await portal.admin.webhookDeliveries();
  assert.equal(deliveries.length, 1);
  return deliveries[0] as (typeof deliveries)[number];
}

/**
 * Waits until the portal has stored the outcome of `count` attempts (an attempt is stored as
 * `sending` before it is made). The receiver sees an attempt before the portal records its
 * answer, and a clock moved in between would be read when the retry is scheduled, putting it
 * after the moment the test moves the clock to.
 */
async function attemptsRecorded(portal: TestPortal, count: number): Promise<void> {
  const recorded = async (): Promise<boolean> => {
    const { attempts } = await onlyDelivery(portal);
    return attempts.length >= count && attempts.every((attempt) => attempt.outcome !== 'sending');
  };
  for (let waited = 0; !(await recorded()); waited += 50) {
    if (waited > 10_000) assert.fail(`the portal did not record ${count} attempt(s) within 10 s`);
    await sleep(50);
  }
}

test('a receiver answering 500 or nothing is tried again after 30 s, then 1 min, with the same id and body, until it answers 2xx', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => portal.close());
  const statuses = [500, 0, 200];
  const receiver = await WebhookReceiver.start((_webhook, index) => {
    const status = statuses[index] ?? 200;
    // 0: no answer within the portal's timeout (1 s).
    return status === 0 ? sleep(3_000).then(() => 200) : status;
  });
  t.after(() => receiver.close());
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.disabled' });
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await portal.admin.disableUser('alice');

  await receiver.waitForCount(1, 'the first attempt');
  await attemptsRecorded(portal, 1);
  let delivery = await onlyDelivery(portal);
  assert.equal(delivery.state, 'pending');
  assert.deepEqual(
    delivery.attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.status, attempt.detail]),
    [[1, 'failed', 500, 'receiver error']],
  );
  assert.equal(delivery.next_attempt_at, '2026-03-02T09:00:30+00:00', 'the first retry 30 s later');
  await nothingMore(receiver, 1, 'not before the retry is due');

  clock.advance(30_000);
  await receiver.waitForCount(2, 'the second attempt');
  await attemptsRecorded(portal, 2);
  delivery = await onlyDelivery(portal);
  assert.deepEqual(
    delivery.attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.status, attempt.detail]),
    [
      [1, 'failed', 500, 'receiver error'],
      [2, 'failed', null, 'no answer within 1 s'],
    ],
  );
  assert.equal(delivery.next_attempt_at, '2026-03-02T09:01:30+00:00', 'the second retry a minute later');
  clock.advance(59_000);
  await nothingMore(receiver, 2, 'not a second early');
  clock.advance(1_000);
  await receiver.waitForCount(3, 'the third attempt');
  await attemptsRecorded(portal, 3);
  delivery = await onlyDelivery(portal);
  assert.equal(delivery.state, 'delivered');
  assert.equal(delivery.finished_at, '2026-03-02T09:01:30+00:00');
  const [first, second, third] = receiver.received;
  assert.deepEqual(
    [first, second, third].map((received) => [
      header(received, WEBHOOK_HEADERS.attempt),
      received?.payload.id,
      received?.body,
    ]),
    [1, 2, 3].map((attempt) => [String(attempt), first?.payload.id, first?.body]),
    'the same event and body at every attempt, numbered',
  );
  await nothingMore(receiver, 3, 'a delivered event is not sent again');
});

test('a slow receiver holds up only its own deliveries: another receiver gets the same events at once', async (t) => {
  const portal = await startTestPortal({
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], timeout: 'PT10S' } },
  });
  t.after(() => portal.close());
  let answerSlow: (() => void) | null = null;
  const slow = await WebhookReceiver.start(() => new Promise<number>((resolve) => (answerSlow = () => resolve(200))));
  t.after(() => slow.close());
  const fast = await WebhookReceiver.start();
  t.after(() => fast.close());
  await portal.admin.createWebhook({ url: slow.url, event_types: '*' });
  await portal.admin.createWebhook({ url: fast.url, event_types: '*' });
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await portal.admin.disableUser('alice');

  await slow.waitForCount(1, 'the first event, held');
  await fast.waitForCount(3, 'every event while the slow one holds its first', 5_000);
  assert.equal(slow.received.length, 1, 'the slow receiver gets one attempt at a time');
  (answerSlow as (() => void) | null)?.();
  await slow.waitForCount(2, 'the next event once it answered');
});

test('eight slow receivers with a backlog do not keep a newer event of another receiver waiting: it gets the next free slot', async (t) => {
  const portal = await startTestPortal({
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], timeout: 'PT30S' } },
  });
  t.after(() => portal.close());
  // As many slow receivers as an instance has slots: each holds every request until the test answers it.
  const held = Array.from({ length: 8 }, () => [] as (() => void)[]);
  const slow = await Promise.all(
    held.map((requests) =>
      WebhookReceiver.start(() => new Promise<number>((resolve) => requests.push(() => resolve(200)))),
    ),
  );
  t.after(() => Promise.all(slow.map((receiver) => receiver.close())));
  for (const receiver of slow) await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.created' });
  const other = await WebhookReceiver.start();
  t.after(() => other.close());
  await portal.admin.createWebhook({ url: other.url, event_types: 'user.disabled' });
  // Three events each: the slow receivers hold the first, the other two wait behind it.
  for (const userId of ['alice', 'bob', 'carol'])
    await portal.admin.create({ user_id: userId, profile_id: 'employees' });
  await Promise.all(slow.map((receiver) => receiver.waitForCount(1, 'the first event, held')));

  await portal.admin.disableUser('alice');
  // One slow receiver answers: the slot it frees goes to the receiver that has waited, not to
  // that slow receiver's next (older) event.
  held[0]?.shift()?.();
  await other.waitForCount(1, 'its event in the first slot freed', 5_000);
  assert.equal(other.received[0]?.payload.type, 'user.disabled');
  await slow[0]?.waitForCount(2, 'its next event once a slot is free again');
});

test('eight receivers that never answer do not keep the others waiting: each gets one attempt, then rests 30 s, then 1 min', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => portal.close());
  // As many black holes as an instance has slots: each accepts the request and never answers.
  const blackHoles = await Promise.all(
    Array.from({ length: 8 }, () => WebhookReceiver.start(() => new Promise<number>(() => {}))),
  );
  t.after(() => Promise.all(blackHoles.map((receiver) => receiver.close())));
  for (const receiver of blackHoles) await portal.admin.createWebhook({ url: receiver.url, event_types: '*' });
  const healthy = await WebhookReceiver.start();
  t.after(() => healthy.close());
  await portal.admin.createWebhook({ url: healthy.url, event_types: '*' });

  const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
  for (const userId of users) await portal.admin.create({ user_id: userId, profile_id: 'employees' });
  await healthy.waitFor(
    (received) => received.filter((webhook) => webhook.payload.type === 'user.created').length === users.length,
    'every user.created at the receiver that answers',
  );
  await sleep(2_500);
  assert.deepEqual(
    blackHoles.map((receiver) => receiver.received.length),
    [1, 1, 1, 1, 1, 1, 1, 1],
    'one attempt each, not one per event',
  );

  clock.advance(30_000);
  await Promise.all(blackHoles.map((receiver) => receiver.waitForCount(2, 'the attempt after the rest')));
  await sleep(2_500);
  assert.deepEqual(
    blackHoles.map((receiver) => receiver.received.length),
    [2, 2, 2, 2, 2, 2, 2, 2],
    'one attempt each after 30 s, then a rest of a minute',
  );
  clock.advance(30_000);
  await sleep(2_500);
  assert.deepEqual(
    blackHoles.map((receiver) => receiver.received.length),
    [2, 2, 2, 2, 2, 2, 2, 2],
    'not after 30 s more',
  );
});

test('a delivery that keeps failing is given up once retryFor after the event is over, and later events still go', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start(() => 503);
  t.after(() => receiver.close());
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.disabled,user.enabled' });
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await portal.admin.disableUser('alice');
  await receiver.waitForCount(1, 'the first attempt');
  await attemptsRecorded(portal, 1);

  // 23 hours later (retryFor is P1D) it is tried again; two hours more and it is given up.
  clock.advance(23 * 3600_000);
  await receiver.waitForCount(2, 'the attempt within the day');
  await attemptsRecorded(portal, 2);
  assert.equal((await onlyDelivery(portal)).state, 'pending');
  clock.advance(2 * 3600_000);
  await nothingMore(receiver, 2, 'not tried once retryFor is over');
  const delivery = await onlyDelivery(portal);
  assert.equal(delivery.state, 'failed');
  assert.equal(delivery.next_attempt_at, null);
  assert.deepEqual(
    delivery.attempts.map((attempt) => attempt.status),
    [503, 503],
  );
  clock.advance(3600_000);
  await nothingMore(receiver, 2, 'a failed delivery is not tried again');

  receiver.answerWith(() => 200);
  await portal.admin.enableUser('alice');
  await receiver.waitForCount(3, 'the next event');
  assert.equal(receiver.received[2]?.payload.type, 'user.enabled');
});

test('events older than retryFor are given up without an attempt while their receiver rests: none stays pending, none is sent late', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => portal.close());
  // A black hole: it takes the request and never answers, so it rests after each attempt.
  const receiver = await WebhookReceiver.start(() => new Promise<number>(() => {}));
  t.after(() => receiver.close());
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.created' });
  const users = ['alice', 'bob', 'carol'];
  for (const userId of users) await portal.admin.create({ user_id: userId, profile_id: 'employees' });
  await receiver.waitForCount(1, 'the first attempt');
  const attemptOver = async (): Promise<boolean> =>
    (await portal.admin.webhookDeliveries()).webhook_deliveries.some((delivery) =>
      delivery.attempts.some((attempt) => attempt.outcome === 'failed'),
    );
  for (let waited = 0; !(await attemptOver()); waited += 50) {
    if (waited > 10_000) assert.fail('the first attempt was not recorded within 10 s');
    await sleep(50);
  }

  // A day and an hour later (retryFor is P1D) the receiver answers again: the events it missed
  // are over a day old, given up, and not sent now.
  clock.advance(25 * 3600_000);
  receiver.answerWith(() => 200);
  await sleep(2_500);
  const { webhook_deliveries: deliveries } = await portal.admin.webhookDeliveries();
  assert.deepEqual(
    deliveries.map((delivery) => delivery.state),
    ['failed', 'failed', 'failed'],
    'every delivery older than retryFor is given up, attempted or not',
  );
  assert.equal(receiver.received.length, 1, 'no event older than retryFor is sent');

  await portal.admin.create({ user_id: 'dave', profile_id: 'employees' });
  await receiver.waitForCount(2, 'the next event');
  assert.equal(receiver.received[1]?.payload.type, 'user.created');
});

test('during a secret rotation deliveries carry a signature with each secret; after the overlap only the new one', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  // Subscribed to an event this test never causes: with '*', a node.down of the test portal's
  // unreachable node could arrive first and be taken for the test deliveries.
  const { webhook, secret: oldSecret } = await portal.admin.createWebhook({
    url: receiver.url,
    event_types: 'user.destroyed',
  });
  const rotated = await portal.admin.rotateWebhookSecret(webhook.webhook_id, 'PT1H');
  assert.notEqual(rotated.secret, oldSecret);
  assert.equal(rotated.previous_secret_until, '2026-03-02T10:00:00+00:00');
  assert.equal((await portal.admin.webhooks())[0]?.previous_secret_until, '2026-03-02T10:00:00+00:00');

  const during = await portal.admin.testWebhook(webhook.webhook_id);
  assert.equal(during.outcome, 'delivered');
  clock.advance(3600_000);
  await portal.admin.testWebhook(webhook.webhook_id);
  const [overlap, after] = receiver.received;
  const now = clock.now().getTime() / 1000;
  const signatureOf = (received: ReceivedWebhook | undefined) => header(received, WEBHOOK_HEADERS.signature);
  assert.match(signatureOf(overlap), /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  for (const secret of [oldSecret, rotated.secret]) {
    assert.ok(
      verifyWebhookSignature(signatureOf(overlap), overlap?.body ?? '', secret, now - 3600),
      'either secret verifies during the overlap',
    );
  }
  assert.match(signatureOf(after), /^t=\d+,v1=[0-9a-f]{64}$/);
  assert.ok(verifyWebhookSignature(signatureOf(after), after?.body ?? '', rotated.secret, now));
  assert.equal(
    verifyWebhookSignature(signatureOf(after), after?.body ?? '', oldSecret, now),
    false,
    'the old secret no longer signs',
  );
});

test('a subscription whose receiver the address guard no longer allows gets nothing: each attempt is refused, not sent', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'webhook-guard-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const allowed = await startTestPortal({ config: allowLoopback, dataDir });
  await allowed.admin.createWebhook({ url: receiver.url, event_types: 'user.created' });
  await allowed.close();

  // The administrator removed the allow-list; the subscription stays but its target is refused.
  const portal = await startTestPortal({ config: { webhooks: { timeout: 'PT1S' } }, dataDir });
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await sleep(300);
  let delivery = await onlyDelivery(portal);
  for (let waited = 0; delivery.attempts.length === 0 && waited < 40; waited++) {
    await sleep(100);
    delivery = await onlyDelivery(portal);
  }
  assert.equal(delivery.state, 'pending', 'tried again later: the allow-list may come back');
  assert.deepEqual(
    delivery.attempts.map((attempt) => [attempt.outcome, attempt.status, attempt.detail]),
    [['refused', null, '127.0.0.1 is a loopback (127.0.0.0/8) address; allow it with webhooks.allowPrivateTargets']],
  );
  await nothingMore(receiver, 0, 'nothing reached the receiver');
});

test('a receiver answering 2xx with a binary body has its attempt recorded, its control characters shown as U+FFFD, and is not sent the event again', async (t) => {
  let requests = 0;
  const receiver = createServer((request, response) => {
    requests++;
    request.resume();
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    response.end(Buffer.concat([Buffer.from([0x00, 0x01, 0x1f]), Buffer.from('ok\tthanks\n')]));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const portal = await startTestPortal({ config: allowLoopback });
  t.after(() => portal.close());
  const { port } = receiver.address() as AddressInfo;
  await portal.admin.createWebhook({ url: `http://127.0.0.1:${port}/hook`, event_types: 'user.created' });
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });

  let delivery = await onlyDelivery(portal);
  for (let waited = 0; delivery.state !== 'delivered' && waited < 100; waited++) {
    await sleep(100);
    delivery = await onlyDelivery(portal);
  }
  assert.equal(delivery.state, 'delivered', JSON.stringify(delivery));
  assert.deepEqual(
    delivery.attempts.map((attempt) => [attempt.outcome, attempt.status, attempt.detail]),
    [['delivered', 200, '\ufffd\ufffd\ufffdok\tthanks\n']],
  );
  await sleep(1_500);
  assert.equal(requests, 1, 'sent once');
});

test('a receiver that answers 200 at once but never ends its body has the event delivered, and is not sent it again', async (t) => {
  const clock = new ManualClock();
  let requests = 0;
  const receiver = createServer((request, response) => {
    requests++;
    request.resume();
    // The status and a word at once; the body is never ended (a receiver that streams its work).
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.write('accepted');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    receiver.closeAllConnections();
    return new Promise<void>((resolve) => receiver.close(() => resolve()));
  });
  const portal = await startTestPortal({ config: allowLoopback, clock });
  t.after(() => portal.close());
  const { port } = receiver.address() as AddressInfo;
  await portal.admin.createWebhook({ url: `http://127.0.0.1:${port}/hook`, event_types: 'user.created' });
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });

  await attemptsRecorded(portal, 1);
  const delivery = await onlyDelivery(portal);
  assert.equal(delivery.state, 'delivered', JSON.stringify(delivery));
  assert.deepEqual(
    delivery.attempts.map((attempt) => [attempt.outcome, attempt.status, attempt.detail]),
    [['delivered', 200, 'accepted']],
  );
  clock.advance(30_000);
  await sleep(1_500);
  assert.equal(requests, 1, 'an event the receiver answered 200 to is not sent again');
});

test('a subscription whose secret this portal cannot open is sent nothing unsigned: the attempt fails, naming the key file, and is tried again later, not at once', async (t) => {
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const portal = await startTestPortal({ config: allowLoopback });
  t.after(() => portal.close());
  const { webhook } = await portal.admin.createWebhook({
    url: receiver.url,
    event_types: 'user.created',
  });
  // Sealed with another instance's webhooks.key.
  const foreign = new AnswerCipher(randomBytes(32)).seal('another secret', `webhook:${webhook.webhook_id}`);
  await portal.portal.ctx.db.updateTable('webhooks').set({ secret: foreign }).execute();
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });

  await attemptsRecorded(portal, 1);
  const delivery = await onlyDelivery(portal);
  assert.equal(delivery.state, 'pending');
  assert.deepEqual(
    delivery.attempts.map((attempt) => [attempt.outcome, attempt.status]),
    [['failed', null]],
  );
  assert.match(
    delivery.attempts[0]?.detail ?? '',
    /cannot be opened: every portal instance needs the same .*webhooks\.key$/,
  );
  assert.ok(
    Date.parse(delivery.next_attempt_at ?? '') - Date.now() > 20_000,
    `tried again at ${delivery.next_attempt_at}, after the first wait`,
  );
  await nothingMore(receiver, 0, 'nothing unsigned reached the receiver');
  assert.equal((await onlyDelivery(portal)).attempts.length, 1, 'not attempted again at once');
});

test('a portal killed with SIGKILL mid-delivery delivers every event after a restart: the one in flight again, none the receiver acknowledged', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'webhook-kill-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const server = process.env['TEST_DATABASE_URL'];
  let database = `sqlite:${path.join(directory, 'db.sqlite')}`;
  if (server !== undefined && server !== '') {
    const { name, url } = await createTestDatabase(server);
    t.after(() => dropTestDatabase(server, name));
    database = url;
  }
  const configFile = path.join(directory, 'portal.json');
  const config: PortalConfigFile = {
    ...defaultTestConfig,
    logLevel: 'info',
    dataDir: path.join(directory, 'data'),
    database,
    // Long enough that no stall of a loaded machine lets the killed instance see its deadline
    // pass and record the attempt first; the lease (timeout + 15 s) is what the restart waits out.
    webhooks: { allowPrivateTargets: ['127.0.0.0/8'], timeout: 'PT5S' },
  };
  writeFileSync(configFile, JSON.stringify(config));
  await generateSecrets(loadPortalConfig(configFile), { adminApi: true, node: undefined }, () => {});
  const secret = readFileSync(path.join(directory, 'data', 'keys', 'admin-api.key'), 'utf8').trim();

  // The fifth request is held, and the portal is killed mid-attempt as soon as it has arrived and
  // the six creates are answered, not after a look that a loaded machine could delay.
  let release: (() => void) | null = null;
  let first: PortalProcess | undefined;
  let fifthArrived = false;
  let createsAnswered = false;
  const killWhenMidAttempt = () => {
    if (fifthArrived && createsAnswered) first?.child.kill('SIGKILL');
  };
  const receiver = await WebhookReceiver.start((_webhook, index) => {
    if (index !== 4) return 200;
    fifthArrived = true;
    killWhenMidAttempt();
    return new Promise<number>((resolve) => (release = () => resolve(200)));
  });
  t.after(() => receiver.close());
  first = new PortalProcess(configFile);
  const exited = once(first.child, 'exit');
  t.after(async () => void (await first?.stop()));
  const admin = new AdminApiClient({ baseUrl: `${await first.ready()}/vpn-user-portal/`, key: secret });
  await admin.createWebhook({ url: receiver.url, event_types: 'user.created,configuration.created' });
  for (const user of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'])
    await admin.create({ user_id: user, profile_id: 'employees' });
  createsAnswered = true;
  killWhenMidAttempt();
  await receiver.waitForCount(5, 'four acknowledged and one in flight');
  const acknowledged = receiver.received.slice(0, 4).map((received) => received.payload.id);
  const inFlight = receiver.received[4]?.payload.id;

  await exited;
  (release as (() => void) | null)?.();

  const second = new PortalProcess(configFile);
  t.after(async () => void (await second.stop()));
  const restarted = new AdminApiClient({ baseUrl: `${await second.ready()}/vpn-user-portal/`, key: secret });
  // The killed instance's lease (timeout + 15 s) runs out, then the restarted one takes over.
  await restarted.create({ user_id: 'u7', profile_id: 'employees' });
  await receiver.waitFor(
    (received) => new Set(received.map((webhook) => webhook.payload.id)).size === 14,
    'all 14 events',
    120_000,
  );
  await nothingMore(receiver, receiver.received.length, 'no more after every event arrived');

  const db = connectDatabase(loadPortalConfig(configFile).database);
  t.after(() => db.destroy());
  const outbox = await db.selectFrom('webhook_deliveries').select(['event_id', 'state', 'attempts']).execute();
  assert.equal(outbox.length, 14, 'seven users, each user.created and configuration.created');
  assert.deepEqual(
    new Set(receiver.received.map((webhook) => webhook.payload.id)),
    new Set(outbox.map((row) => row.event_id)),
    'no event lost',
  );
  assert.deepEqual(
    new Set(outbox.map((row) => row.state)),
    new Set(['delivered']),
    JSON.stringify(await db.selectFrom('webhook_attempts').selectAll().execute()),
  );
  for (const id of acknowledged) {
    assert.equal(
      receiver.received.filter((webhook) => webhook.payload.id === id).length,
      1,
      'an acknowledged event is not sent again',
    );
  }
  const repeats = receiver.received.filter((webhook) => webhook.payload.id === inFlight);
  assert.deepEqual(
    repeats.map((webhook) => header(webhook, WEBHOOK_HEADERS.attempt)),
    ['1', '2'],
    'the event in flight is sent again, as attempt 2',
  );
  assert.equal(receiver.received.length, 15, 'fourteen events, one of them twice');
  const attempts = await db
    .selectFrom('webhook_attempts')
    .select(['outcome'])
    .where('attempt', '=', 1)
    .where('outcome', '!=', 'delivered')
    .execute();
  assert.deepEqual(
    attempts.map((row) => row.outcome),
    ['interrupted'],
    'the delivery log shows the attempt the kill cut off',
  );
});
