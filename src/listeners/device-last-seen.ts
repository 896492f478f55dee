// A device's `last_seen_at`, so an administrator sees which devices still use the VPN: when a session of one of its configurations starts, its
// device (if it was issued to one) is stamped, in the transaction that records the session.
import type { PortalEvents } from '../core/events.js';
import { formatAtom } from '../shared/time.js';
import { touchDeviceOfConfiguration } from '../storage/devices.js';

export function stampDeviceLastSeen(events: PortalEvents): void {
  events.inTransaction(async (event, db) => {
    if (event.type !== 'session.started') return;
    await touchDeviceOfConfiguration(
      db,
      event.configuration.vpnProto,
      event.configuration.connectionId,
      formatAtom(event.at),
    );
  });
}
