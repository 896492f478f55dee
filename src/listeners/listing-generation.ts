// Tells cached listings that they are out of date: every change to users or configurations
// moves the listing generation forward in its own transaction (src/core/listing-cache.ts).
// What never changes a listing (sessions, nodes, reconcile passes, the audit record of a call)
// leaves it alone; anything else moves it, so an event type added later can only cost a cache
// miss, never a stale answer.
import type { PortalEvent, PortalEvents } from '../core/events.js';
import { bumpListingGeneration } from '../storage/listing-generation.js';

const LISTING_NEUTRAL: ReadonlySet<PortalEvent['type']> = new Set([
  'admin.call',
  'session.started',
  'session.ended',
  'node.down',
  'node.up',
  'reconcile.finished',
]);

export function moveListingGeneration(events: PortalEvents): void {
  // Once per transaction: a change that announces several events (a destroy) takes one shard
  // lock, so two such transactions on PostgreSQL can never wait for each other's shard.
  const moved = new WeakSet<object>();
  events.inTransaction(async (event, db) => {
    if (LISTING_NEUTRAL.has(event.type) || moved.has(db)) return;
    await bumpListingGeneration(db);
    // Outside a transaction each event is its own change, and moves the counter again.
    if (db.isTransaction) moved.add(db);
  });
}
