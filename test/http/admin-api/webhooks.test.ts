// The webhook calls of the Admin API: a subscription's secret is shown once and stored sealed,
// never logged or audited; bad input and refused targets (loopback, link-local, private,
// unless allow-listed) get a clear JSON error and change nothing; deleting a subscription
// cancels what it still had to send; test_webhook answers what the receiver did; the delivery
// log filters and pages with a cursor.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { auditLog, ManualClock, portalState } from '../../support/admin-keys.js';
import { capturedLog } from '../../support/captured-log.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';

const DAY = 24 * 3600_000;

test('bad parameters and unknown subscriptions get a clear JSON error and change nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const before = await portalState(portal);
  const cases: [string, 'GET' | 'POST', Record<string, string>, number, string][] = [
    ['/create_webhook', 'POST', { event_types: '*' }, 400, 'missing post parameter "url"'],
    ['/create_webhook', 'POST', { url: 'ftp://192.0.2.1/', event_types: '*' }, 400, 'invalid value for "url"'],
    ['/create_webhook', 'POST', { url: 'not a url', event_types: '*' }, 400, 'invalid value for "url"'],
    [
      '/create_webhook',
      'POST',
      { url: 'https://me:pw@192.0.2.1/', event_types: '*' },
      400,
      'a webhook URL must not carry a user name or password: receivers authenticate the portal by the signature',
    ],
    ['/create_webhook', 'POST', { url: 'https://192.0.2.1/' }, 400, 'missing post parameter "event_types"'],
    [
      '/create_webhook',
      'POST',
      { url: 'https://192.0.2.1/', event_types: 'user.created,user.renamed' },
      400,
      'invalid value for "event_types"',
    ],
    [
      '/create_webhook',
      'POST',
      { url: 'https://192.0.2.1/', event_types: '*', description: 'x'.repeat(256) },
      400,
      'invalid value for "description"',
    ],
    ['/delete_webhook', 'POST', { webhook_id: 'nope' }, 400, 'invalid value for "webhook_id"'],
    ['/delete_webhook', 'POST', { webhook_id: `wh_${'0'.repeat(24)}` }, 404, `no webhook "wh_${'0'.repeat(24)}"`],
    [
      '/rotate_webhook_secret',
      'POST',
      { webhook_id: `wh_${'0'.repeat(24)}` },
      404,
      `no webhook "wh_${'0'.repeat(24)}"`,
    ],
    [
      '/rotate_webhook_secret',
      'POST',
      { webhook_id: `wh_${'0'.repeat(24)}`, overlap: 'P8D' },
      400,
      'invalid value for "overlap": "P8D" is not an ISO 8601 duration from PT0S to P7D such as P1D',
    ],
    ['/test_webhook', 'POST', { webhook_id: `wh_${'0'.repeat(24)}` }, 404, `no webhook "wh_${'0'.repeat(24)}"`],
    ['/webhook_deliveries', 'GET', { cursor: 'x' }, 400, 'invalid value for "cursor"'],
    ['/webhook_deliveries', 'GET', { state: 'lost' }, 400, 'invalid value for "state"'],
    ['/webhook_deliveries', 'GET', { event_type: 'user.renamed' }, 400, 'invalid value for "event_type"'],
  ];
  for (const [path, method, form, status, error] of cases) {
    const response = method === 'POST' ? await portal.post(path, form) : await portal.get(path, form);
    assert.equal(response.status, status, `${path} ${JSON.stringify(form)}: ${response.text}`);
    assert.equal(errorBody(response.text), error);
  }
  assert.deepEqual(await portalState(portal), before, 'nothing changed');
});

test('a URL refused for its user name and password leaves neither in the audit log nor in the log', async (t) => {
  const log = capturedLog('debug');
  const portal = await startTestPortal({ logger: log.logger });
  t.after(() => portal.close());
  // An administrator pastes the receiver's address with its Basic credentials, as a browser takes it;
  // and once more with a typing error in the host, which no URL parser reads.
  for (const url of ['https://siem:Tr0ub4dor-3@192.0.2.1/hook', 'https://siem:Tr0ub4dor-3@192.0 .2.1/hook']) {
    const refused = await portal.post('/create_webhook', { url, event_types: '*' });
    assert.equal(refused.status, 400, refused.text);
  }
  const rows = await auditLog(portal, 2);
  assert.deepEqual(
    rows.map((row) => [row.call, row.status, row.parameters['url']]),
    [
      ['create_webhook', 400, 'https://192.0 .2.1/hook'],
      ['create_webhook', 400, 'https://192.0.2.1/hook'],
    ],
    'each refusal is recorded, with the address but without the credentials',
  );
  const everywhere = `${JSON.stringify(rows)}\n${log.text()}`;
  for (const part of ['Tr0ub4dor-3', 'siem:']) assert.equal(everywhere.includes(part), false, `${part} kept nowhere`);
});

test('a receiver in a loopback, link-local or private range is refused unless webhooks.allowPrivateTargets allows it', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const refused: [string, RegExp][] = [
    [
      'http://127.0.0.1:8080/hooks',
      /^127\.0\.0\.1 is a loopback \(127\.0\.0\.0\/8\) address; allow it with webhooks\.allowPrivateTargets$/,
    ],
    ['http://[::1]/hooks', /^::1 is a loopback \(::1\/128\) address/],
    ['http://localhost/hooks', /^localhost resolves to (127\.0\.0\.1|::1), a loopback/],
    ['http://169.254.169.254/latest/meta-data/', /^169\.254\.169\.254 is a link-local \(169\.254\.0\.0\/16\) address/],
    ['https://10.1.2.3/', /^10\.1\.2\.3 is a private \(RFC 1918\) \(10\.0\.0\.0\/8\) address/],
    ['https://192.168.1.1/', /private \(RFC 1918\) \(192\.168\.0\.0\/16\)/],
    ['https://100.64.0.1/', /shared address space \(CGNAT\)/],
    ['https://[fd00::1]/', /unique local \(ULA\)/],
    ['https://[::ffff:127.0.0.1]/', /loopback \(127\.0\.0\.0\/8\)/],
    ['http://[::127.0.0.1]/', /^::7f00:1 is a loopback \(127\.0\.0\.0\/8\) address/],
    ['http://[2002:7f00:1::]/', /^2002:7f00:1:: is a loopback \(127\.0\.0\.0\/8\) address/],
    ['http://[64:ff9b:1:a9fe:a9:fe00::]/', /link-local \(169\.254\.0\.0\/16\)/],
    ['http://[2001:0:808:808::80ff:fffe]/', /loopback \(127\.0\.0\.0\/8\)/],
    ['https://0.0.0.0/', /unspecified/],
  ];
  const before = await portalState(portal);
  for (const [url, message] of refused) {
    const response = await portal.post('/create_webhook', { url, event_types: '*' });
    assert.equal(response.status, 400, `${url}: ${response.text}`);
    assert.match(errorBody(response.text), message, url);
  }
  assert.deepEqual(await portalState(portal), before, 'nothing stored');

  const allowing = await startTestPortal({
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8', '10.1.0.0/16'] } },
  });
  t.after(() => allowing.close());
  for (const url of ['http://127.0.0.1:8080/hooks', 'https://10.1.2.3/']) {
    assert.equal((await allowing.post('/create_webhook', { url, event_types: 'node.up' })).status, 200, url);
  }
  for (const url of ['http://[::1]/hooks', 'https://10.2.0.1/']) {
    assert.equal(
      (await allowing.post('/create_webhook', { url, event_types: 'node.up' })).status,
      400,
      `${url}: outside the allow-list`,
    );
  }
  assert.equal(
    (await portal.post('/create_webhook', { url: 'https://192.0.2.1/hooks', event_types: 'node.up' })).status,
    200,
    'a public address',
  );
});

test('the secret is shown once, stored sealed, and never in the list, the log or the audit log; changes are audited', async (t) => {
  const log = capturedLog('debug');
  const portal = await startTestPortal({
    logger: log.logger,
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } },
  });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const created = await portal.admin.createWebhook({
    url: receiver.url,
    event_types: 'user.created,user.destroyed',
    description: 'SIEM',
  });
  assert.match(created.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(created.webhook, {
    webhook_id: created.webhook.webhook_id,
    url: receiver.url,
    event_types: ['user.created', 'user.destroyed'],
    description: 'SIEM',
    created_at: created.webhook.created_at,
    previous_secret_until: null,
  });
  const rotated = await portal.admin.rotateWebhookSecret(created.webhook.webhook_id);
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await receiver.waitForCount(1, 'user.created');

  const list = await portal.get('/webhooks');
  assert.deepEqual(list.json(), {
    webhooks: [{ ...created.webhook, previous_secret_until: rotated.previous_secret_until }],
  });
  const stored = JSON.stringify(await portal.portal.ctx.db.selectFrom('webhooks').selectAll().execute());
  const audit = await auditLog(portal);
  const everywhere = [
    stored,
    list.text,
    log.text(),
    JSON.stringify(audit),
    JSON.stringify(await portal.admin.webhookDeliveries()),
  ].join('\n');
  for (const secret of [created.secret, rotated.secret, created.secret.slice(6), rotated.secret.slice(6)]) {
    assert.equal(everywhere.includes(secret), false, 'no secret stored readable, listed, logged or audited');
  }
  assert.deepEqual(audit.map((entry) => [entry.call, entry.status]).reverse(), [
    ['create_webhook', 200],
    ['rotate_webhook_secret', 200],
    ['create', 200],
  ]);
  await portal.admin.deleteWebhook(created.webhook.webhook_id);
  assert.deepEqual(await portal.admin.webhooks(), []);
  assert.deepEqual(
    (await auditLog(portal, 1)).map((entry) => entry.call),
    ['delete_webhook'],
  );
});

test('deleting a subscription cancels what it had still to send; test_webhook reports a failure at once and does not retry it', async (t) => {
  const portal = await startTestPortal({ config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } } });
  t.after(() => portal.close());
  // This receiver always fails: its deliveries wait for their retries.
  const stuck = await WebhookReceiver.start(() => 500);
  t.after(() => stuck.close());
  const { webhook } = await portal.admin.createWebhook({
    url: stuck.url,
    event_types: 'user.created,configuration.created',
  });

  const tested = await portal.admin.testWebhook(webhook.webhook_id);
  assert.deepEqual(
    { ...tested, delivery_id: '', event_id: '', duration_ms: 0 },
    { delivery_id: '', event_id: '', outcome: 'failed', status: 500, duration_ms: 0, detail: 'receiver error' },
  );
  assert.equal(stuck.received[0]?.payload.type, 'webhook.test');
  assert.deepEqual(stuck.received[0]?.payload.data, { webhook_id: webhook.webhook_id });
  assert.equal(stuck.received[0]?.payload.id, tested.event_id);

  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await stuck.waitForCount(3, 'the test and the first attempts of two events');
  await portal.admin.deleteWebhook(webhook.webhook_id);
  const log = await portal.admin.webhookDeliveries({ webhook_id: webhook.webhook_id });
  assert.deepEqual(
    log.webhook_deliveries.map((entry) => [entry.event_type, entry.state, entry.attempts.length]),
    [
      ['configuration.created', 'cancelled', 1],
      ['user.created', 'cancelled', 1],
      ['webhook.test', 'failed', 1],
    ],
    'the test was tried once; the events waiting for a retry were cancelled, the log kept',
  );
  await sleep(1_500);
  assert.equal(stuck.received.length, 3, 'nothing more after the deletion');
});

test('the delivery log filters by subscription, type, event and state, and pages newest first with a cursor', async (t) => {
  const portal = await startTestPortal({ config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } } });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const users = await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.created' });
  // Not `*`: the test portal's node never answers, and a node.down may come at any moment.
  const everything = await portal.admin.createWebhook({
    url: receiver.url,
    event_types: 'user.created,configuration.created',
  });
  for (const user of ['a', 'b', 'c']) await portal.admin.create({ user_id: user, profile_id: 'employees' });
  await receiver.waitForCount(9, 'three events for one, six for the other');
  await sleep(300);

  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await portal.admin.webhookDeliveries({
      webhook_id: everything.webhook.webhook_id,
      limit: 4,
      ...(cursor === undefined ? {} : { cursor }),
    });
    pages.push(page.webhook_deliveries.map((entry) => entry.event_type));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  assert.deepEqual(pages, [
    ['configuration.created', 'user.created', 'configuration.created', 'user.created'],
    ['configuration.created', 'user.created'],
  ]);
  const created = await portal.admin.webhookDeliveries({ event_type: 'user.created' });
  assert.equal(created.webhook_deliveries.length, 6);
  const [newest] = created.webhook_deliveries;
  const sameEvent = await portal.admin.webhookDeliveries({ event_id: newest?.event_id ?? '' });
  assert.deepEqual(
    sameEvent.webhook_deliveries.map((entry) => entry.webhook_id).sort(),
    [users.webhook.webhook_id, everything.webhook.webhook_id].sort(),
    'one event, one delivery per subscription',
  );
  assert.equal((await portal.admin.webhookDeliveries({ state: 'pending' })).webhook_deliveries.length, 0);
  assert.equal(
    (await portal.admin.webhookDeliveries({ state: 'delivered', webhook_id: users.webhook.webhook_id }))
      .webhook_deliveries.length,
    3,
  );
});

test('the daily housekeeping deletes finished deliveries older than deliveryLogRetention, with their attempts, and keeps pending ones', async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({
    clock,
    config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], deliveryLogRetention: 'P30D', retryFor: 'P60D' } },
  });
  t.after(() => portal.close());
  await portal.reconcile(); // the start-up pass (and its housekeeping) is done before the clock moves
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const failing = await WebhookReceiver.start(() => 500);
  t.after(() => failing.close());
  await portal.admin.createWebhook({ url: receiver.url, event_types: 'user.created' });
  await portal.admin.createWebhook({ url: failing.url, event_types: 'user.created' });
  await portal.admin.create({ user_id: 'old', profile_id: 'employees' });
  await receiver.waitForCount(1, 'the old event');
  await failing.waitForCount(1, 'the first attempt of the old event');
  // The receiver has answered, but the portal may not have recorded the attempt yet: a clock
  // advanced before that would place the retry 30 s after the new time, which never comes.
  await until('the first failed attempt recorded', async () =>
    (await portal.admin.webhookDeliveries()).webhook_deliveries.some(
      (entry) => entry.state === 'pending' && entry.attempts.length === 1,
    ),
  );
  clock.advance(20 * DAY);
  await portal.admin.create({ user_id: 'recent', profile_id: 'employees' });
  await receiver.waitForCount(2, 'the recent event');
  await failing.waitForCount(3, 'the retry of the old event and the first attempt of the recent one');
  await sleep(300);

  clock.advance(11 * DAY); // the old event is 31 days old, the recent one 11
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  assert.equal(result?.webhookDeliveriesDeleted, 1, 'the delivered old one');
  const left = await portal.admin.webhookDeliveries();
  assert.deepEqual(
    left.webhook_deliveries.map((entry) => [entry.state, entry.created_at.slice(0, 10)]).sort(),
    [
      ['pending', '2026-01-30'],
      ['delivered', '2026-01-30'],
      ['pending', '2026-01-10'],
    ].sort(),
    'the old pending one stays until it is finished',
  );
  const attempts = await portal.portal.ctx.db.selectFrom('webhook_attempts').select('delivery_id').execute();
  assert.ok(
    attempts.every((attempt) => left.webhook_deliveries.some((entry) => entry.delivery_id === attempt.delivery_id)),
    'no attempt outlives its delivery',
  );
});
