// The webhook outbox's statement reads the subscriptions as it writes: each event goes to every
// subscription that asked for its type or for every type, and to no other, under a delivery id
// of its own that keeps the order the events were written in; a change with more events than
// one statement takes loses none; and a delivery whose event is older than retryFor is given up
// unless an attempt holds it. On SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeOrderedId } from '../../src/shared/time-ordered-id.js';
import { formatAtom } from '../../src/shared/time.js';
import { startAttempt } from '../../src/storage/webhook-attempts.js';
import {
  finishDelivery,
  giveUpExpiredDeliveries,
  insertDeliveries,
  insertOutboxDeliveries,
  OUTBOX_EVENTS_PER_STATEMENT,
  type OutboxEvent,
} from '../../src/storage/webhook-deliveries.js';
import { ManualClock } from '../support/admin-keys.js';
import { startTestPortal } from '../support/test-portal.js';
import { subscribe } from '../support/webhook-subscriptions.js';

// An hour from now: the deliveries are not due yet, so the test portal's delivery worker, which
// looks for due ones on its own, leaves them as they were written while the test reads them.
const AT = formatAtom(new Date(Date.now() + 3_600_000));
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function outboxEvent(eventType: string): OutboxEvent {
  const eventId = timeOrderedId();
  return { idSource: timeOrderedId(), eventId, eventType, payload: JSON.stringify({ id: eventId }), createdAt: AT };
}

test('each event goes to every subscription that asked for its type or for every type, pending, under time-ordered ids of its own', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  await subscribe(db, 'every', ['*']);
  await subscribe(db, 'created', ['configuration.created', 'user.created']);
  await subscribe(db, 'disabled', ['user.disabled']);
  const events = [outboxEvent('user.created'), outboxEvent('configuration.created'), outboxEvent('session.started')];

  assert.equal(await insertOutboxDeliveries(db, events), 5);

  const eventOrder = events.map((event) => event.eventId);
  // The portal's own events (its node is unreachable) may go to `every` meanwhile: only these count.
  const rows = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('event_id', 'in', eventOrder)
    .orderBy('delivery_id')
    .execute();
  assert.deepEqual(rows.map((row) => [eventOrder.indexOf(row.event_id), row.webhook_id]).sort(), [
    [0, 'created'],
    [0, 'every'],
    [1, 'created'],
    [1, 'every'],
    [2, 'every'],
  ]);
  const byId = rows.map((row) => eventOrder.indexOf(row.event_id));
  assert.deepEqual(byId, [...byId].sort(), 'the ids keep the order the events were written in');
  for (const row of rows) {
    const event = events.find((candidate) => candidate.eventId === row.event_id);
    assert.ok(event !== undefined);
    assert.match(row.delivery_id, UUID_V7);
    assert.equal(row.delivery_id.slice(0, 19), event.idSource.slice(0, 19), 'the time and counter are the event’s');
    assert.deepEqual(
      [row.event_type, row.payload, row.created_at, row.state, row.attempts, row.next_attempt_at, row.lease_until],
      [event.eventType, event.payload, AT, 'pending', 0, AT, null],
    );
  }
  assert.equal(new Set(rows.map((row) => row.delivery_id)).size, rows.length, 'every delivery has an id of its own');
});

test('without a subscription that wants them, events write nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  assert.equal(await insertOutboxDeliveries(db, [outboxEvent('user.created')]), 0);
  await subscribe(db, 'disabled', ['user.disabled']);
  assert.equal(await insertOutboxDeliveries(db, [outboxEvent('user.created')]), 0);
  assert.equal((await db.selectFrom('webhook_deliveries').select('delivery_id').execute()).length, 0);
});

test('a change with more events than one statement takes writes them all, in several statements', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  await subscribe(db, 'every', ['*']);
  const events = Array.from({ length: OUTBOX_EVENTS_PER_STATEMENT * 2 + 1 }, () =>
    outboxEvent('configuration.deleted'),
  );

  await subscribe(db, 'deleted', ['configuration.deleted']);
  assert.equal(await insertOutboxDeliveries(db, events), events.length * 2);
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .where('webhook_id', '=', 'deleted')
    .execute();
  assert.deepEqual(new Set(rows.map((row) => row.event_id)), new Set(events.map((event) => event.eventId)));
  assert.equal(rows.length, events.length, 'each event once to each subscription');
});

test('deliveries of events older than retryFor are given up, tried or not, but not one an attempt holds, nor newer or finished ones', async (t) => {
  // The portal's clock stands before every delivery here: its own worker finds none due.
  const portal = await startTestPortal({ clock: new ManualClock('2026-03-02T09:00:00Z') });
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const delivery = (deliveryId: string, createdAt: string, lease?: { until: string; token: string }) => ({
    deliveryId,
    webhookId: 'wh_gone',
    eventId: timeOrderedId(),
    eventType: 'user.created',
    payload: '{}',
    createdAt,
    ...(lease === undefined ? {} : { lease }),
  });
  await insertDeliveries(db, [
    delivery('old-sending', '2026-03-10T09:00:00+00:00', { until: '2026-03-10T09:00:25+00:00', token: 'dead' }),
    delivery('old-untried', '2026-03-10T10:00:00+00:00'),
    delivery('old-held', '2026-03-10T11:00:00+00:00', { until: '2026-03-20T09:00:25+00:00', token: 'live' }),
    delivery('old-delivered', '2026-03-10T12:00:00+00:00', { until: '2026-03-10T12:00:25+00:00', token: 'done' }),
    delivery('new', '2026-03-16T09:00:00+00:00'),
  ]);
  // An instance died while sending: its attempt stays `sending`, its lease ran out.
  await startAttempt(db, 'old-sending', 1, '2026-03-10T09:00:00+00:00');
  await finishDelivery(db, 'old-delivered', 'done', { state: 'delivered', at: '2026-03-10T12:00:01+00:00' });

  assert.equal(await giveUpExpiredDeliveries(db, '2026-03-20T09:00:00+00:00', '2026-03-15T09:00:00+00:00'), 2);

  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['delivery_id', 'state', 'finished_at', 'lease_token'])
    .orderBy('delivery_id')
    .execute();
  assert.deepEqual(
    rows.map((row) => [row.delivery_id, row.state, row.finished_at, row.lease_token]),
    [
      ['new', 'pending', null, null],
      ['old-delivered', 'delivered', '2026-03-10T12:00:01+00:00', null],
      ['old-held', 'pending', null, 'live'],
      ['old-sending', 'failed', '2026-03-20T09:00:00+00:00', null],
      ['old-untried', 'failed', '2026-03-20T09:00:00+00:00', null],
    ],
  );
  const attempts = await db.selectFrom('webhook_attempts').select(['delivery_id', 'outcome']).execute();
  assert.deepEqual(attempts, [{ delivery_id: 'old-sending', outcome: 'interrupted' }]);
});
