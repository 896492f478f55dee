// The webhook outbox's statement reads the subscriptions as it writes: each event goes to every
// subscription that asked for its type or for every type, and to no other, under a delivery id
// of its own that keeps the order the events were written in; a change with more events than
// one statement takes loses none. On SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeOrderedId } from '../../src/shared/time-ordered-id.js';
import { formatAtom } from '../../src/shared/time.js';
import {
  insertOutboxDeliveries,
  OUTBOX_EVENTS_PER_STATEMENT,
  type OutboxEvent,
} from '../../src/storage/webhook-deliveries.js';
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
