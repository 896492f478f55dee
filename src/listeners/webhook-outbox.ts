// The webhook outbox: every event a subscription asked for becomes a pending delivery, written
// in the transaction of the change it reports, so a change that happened is delivered even when
// the portal is killed right after, and a change rolled back is never announced. The delivery
// worker (src/core/webhooks/delivery.ts) sends them; it is woken once the change committed.
import type { PortalEvent, PortalEvents } from '../core/events.js';
import { webhookBody, webhookMessageOf } from '../core/webhooks/index.js';
import { EVERY_EVENT_TYPE } from '../protocol/webhooks.js';
import { timeOrderedId } from '../shared/time-ordered-id.js';
import { formatAtom } from '../shared/time.js';
import { insertDeliveries } from '../storage/webhook-deliveries.js';
import { webhookInterests } from '../storage/webhooks.js';

export function writeWebhookOutbox(events: PortalEvents, wake: () => void): void {
  // The subscriptions are read once per transaction (a create announces two or three events),
  // and the worker is woken only for events that gave it something to send.
  const interestsOf = new WeakMap<object, ReturnType<typeof webhookInterests>>();
  const queued = new WeakSet<PortalEvent>();
  events.inTransaction(async (event, db) => {
    const message = webhookMessageOf(event);
    if (message === null) return;
    let interests = db.isTransaction ? interestsOf.get(db) : undefined;
    if (interests === undefined) {
      interests = webhookInterests(db);
      if (db.isTransaction) interestsOf.set(db, interests);
    }
    const subscribers = (await interests).filter(
      (webhook) => webhook.eventTypes.includes(EVERY_EVENT_TYPE) || webhook.eventTypes.includes(message.type),
    );
    if (subscribers.length === 0) return;
    // One id per event: a receiver with two subscriptions, or getting a retry, sees the same id.
    const eventId = timeOrderedId(event.at.getTime());
    const payload = webhookBody(eventId, event.at, message);
    const createdAt = formatAtom(event.at);
    await insertDeliveries(
      db,
      subscribers.map((webhook) => ({
        deliveryId: timeOrderedId(),
        webhookId: webhook.webhookId,
        eventId,
        eventType: message.type,
        payload,
        createdAt,
      })),
    );
    queued.add(event);
  });
  events.afterCommit((event) => {
    if (queued.has(event)) wake();
  });
}
