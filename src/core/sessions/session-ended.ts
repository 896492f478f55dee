// The end of a session the portal saw start: what it ended with, and what its start recorded.
import type { VpnProto } from '../../shared/ids.js';
import type { OpenSession } from '../../storage/connection-log.js';
import type { PortalEvent, SessionEndCause } from '../events.js';

export function sessionEnded(
  vpnProto: VpnProto,
  session: OpenSession,
  at: Date,
  bytesIn: number,
  bytesOut: number,
  cause: SessionEndCause,
): PortalEvent {
  const { connectionId, nodeNumber, userId, profileId, ipFour, ipSix, originatingIp, connectedAt } = session;
  return {
    type: 'session.ended',
    at,
    connectionId,
    vpnProto,
    nodeNumber,
    bytesIn,
    bytesOut,
    cause,
    session: { userId, profileId, ipFour, ipSix, originatingIp, connectedAt },
  };
}
