// Tells cached listings that they are out of date: every change to users or configurations
// moves the listing generation forward in the change's own transaction (src/core/listings/cache.ts).
// What never changes a listing (sessions, nodes, reconcile passes, the audit record of a call)
// leaves it alone; anything else moves it, so an event type added later can only cost a cache
// miss, never a stale answer.
import type { PortalEvent, PortalEvents } from '../core/events.js';

const LISTING_NEUTRAL: ReadonlySet<PortalEvent['type']> = new Set([
  'admin.call',
  'admin_key.created',
  'admin_key.rotated',
  'admin_key.revoked',
  'legal_hold.created',
  'legal_hold.released',
  'scim.changed',
  'session.started',
  'session.ended',
  'node.down',
  'node.up',
  'node.nat_changed',
  'reconcile.finished',
  'revocation.applied',
  'revocation.overdue',
]);

export function moveListingGeneration(events: PortalEvents): void {
  // Once per change, as a closing write, which storage runs after every other of the change
  // (src/storage/closing-writes.ts): the shard's lock is then the last lock any change takes, so
  // two changes never wait for each other's (a create holds its address pool's row before it
  // gets here, and whoever holds a shard holds every other lock it needs already). Events
  // recorded outside a change (node state, calls refused before any change) never change a listing.
  events.closing((announced) =>
    announced.some((event) => !LISTING_NEUTRAL.has(event.type)) ? [{ kind: 'listing-generation' }] : [],
  );
}
