// The connection log (`connection_log`, reference §9): a row opens when a client connects and
// closes, with the byte counts, when it disconnects (a session whose address went to the next
// connection before its end was heard closes then, its counters coming with its late disconnect
// report). Written in the same transaction as the event, so the history never claims a
// connection the portal did not allow. The client's own address is kept past the session only
// when `Log.originatingIp` says so, or a legal hold keeps the user's records: the open session
// needs it (roaming, the session's end event), a closed one only for looking people up by it,
// which is what a hold is for.
import type { PortalEvents } from '../core/events.js';
import { formatAtom } from '../shared/time.js';
import { closeConnection, openConnection } from '../storage/connection-log.js';
import { isUserHeld } from '../storage/legal-holds.js';

export function writeConnectionLog(events: PortalEvents, options: { readonly keepOriginatingIp: boolean }): void {
  events.inTransaction(async (event, db) => {
    if (event.type === 'session.started') {
      const { configuration } = event;
      await openConnection(db, {
        userId: configuration.userId,
        profileId: configuration.profileId,
        vpnProto: configuration.vpnProto,
        connectionId: configuration.connectionId,
        nodeNumber: configuration.nodeNumber,
        ipFour: event.ipFour,
        ipSix: event.ipSix,
        originatingIp: event.originatingIp,
        connectedAt: event.at,
      });
    } else if (event.type === 'session.ended' && event.session !== null) {
      // Without its start's record there is no open row of this session to close (another
      // open session of the same certificate is not this one).
      await closeConnection(db, {
        connectionId: event.connectionId,
        nodeNumber: event.nodeNumber,
        disconnectedAt: event.at,
        // A session the next connection on its address ended before its end was heard has no
        // counters yet (unknown, not none): its disconnect report, if it comes, fills them in.
        bytesIn: event.cause === 'replaced' ? null : event.bytesIn,
        bytesOut: event.cause === 'replaced' ? null : event.bytesOut,
        // A hold suspends the blanking as it suspends the housekeeping's: the address is then
        // blanked by originatingIpRetention once the hold ended.
        forgetOriginatingIp:
          !options.keepOriginatingIp && !(await isUserHeld(db, event.session.userId, formatAtom(event.at))),
        // The session its start recorded: its row closes, not another open one of the same
        // certificate (on another address, or a newer one on the same address).
        ipFour: event.session.ipFour,
        connectedAt: event.session.connectedAt,
      });
    }
  });
}
