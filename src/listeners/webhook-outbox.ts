// The webhook outbox: every event a subscription asked for becomes a pending delivery, written
// in the transaction of the change it reports, so a change that happened is delivered even when
// the portal is killed right after, and a change rolled back is never announced. The delivery
// worker (src/core/webhooks/delivery.ts) sends them; it is woken once the change committed.
import type { PortalEvent, PortalEvents } from '../core/events.js';
import { webhookBody, webhookMessageOf } from '../core/webhooks/index.js';
import { timeOrderedId } from '../shared/time-ordered-id.js';
import { formatAtom } from '../shared/time.js';
import { insertOutboxDeliveries, type OutboxEvent } from '../storage/webhook-deliveries.js';

export function writeWebhookOutbox(events: PortalEvents, wake: () => void): void {
  // The worker is woken only for events that gave it something to send.
  const queued = new WeakSet<PortalEvent>();
  const markQueued = (written: readonly PortalEvent[]) => (deliveries: number) => {
    if (deliveries > 0) for (const event of written) queued.add(event);
  };
  // A change's events: one closing write for all of them, whose statement reads the
  // subscriptions itself (a create makes it part of its final statement: no round trip of its own).
  events.closing((announced) => {
    const outbox = outboxEventsOf(announced);
    if (outbox.length === 0) return [];
    return [
      {
        kind: 'webhook-deliveries',
        events: outbox.map(({ row }) => row),
        written: markQueued(outbox.map(({ event }) => event)),
      },
    ];
  });
  // An event recorded on its own, outside any change (a node going down):
  // written at once. One recorded inside a change comes with the change's closing write above.
  events.inTransaction(async (event, db) => {
    if (db.isTransaction) return;
    const outbox = outboxEventsOf([event]);
    if (outbox.length === 0) return;
    const deliveries = await insertOutboxDeliveries(
      db,
      outbox.map(({ row }) => row),
    );
    markQueued([event])(deliveries);
  });
  events.afterCommit((event) => {
    if (queued.has(event)) wake();
  });
}

/** The events a webhook can report, each with its outbox row (its id and body made now, once). */
function outboxEventsOf(announced: readonly PortalEvent[]): { event: PortalEvent; row: OutboxEvent }[] {
  return announced.flatMap((event) => {
    const message = webhookMessageOf(event);
    if (message === null) return [];
    // One id per event: a receiver with two subscriptions, or getting a retry, sees the same id.
    const eventId = timeOrderedId(event.at.getTime());
    const row: OutboxEvent = {
      idSource: timeOrderedId(),
      eventId,
      eventType: message.type,
      payload: webhookBody(eventId, event.at, message),
      createdAt: formatAtom(event.at),
    };
    return [{ event, row }];
  });
}
