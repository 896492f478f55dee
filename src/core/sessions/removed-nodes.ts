// The open sessions of a node taken out of the configuration: no pass reads that node any more,
// so nothing else would ever end them, and they would stay open for ever: attributed their
// tunnel addresses (which another node may serve now), with RADIUS Interim-Updates, never
// stopped. A full pass ends them as lost, at its time (and its NAT mapping: removed-nodes-nat.ts
// in src/core/nodes).
import { openSessionsOffNodes } from '../../storage/connection-log.js';
import type { PortalContext } from '../context.js';
import { announceSessions } from './announce-sessions.js';
import { sessionEnded } from './session-ended.js';

/** Sessions read and ended at a time. */
const BATCH = 500;

/** Ends the open sessions of nodes the configuration no longer has; answers how many. */
export async function endSessionsOfRemovedNodes(ctx: PortalContext): Promise<number> {
  const configured = [...ctx.config.nodes.keys()];
  let ended = 0;
  for (;;) {
    const sessions = await openSessionsOffNodes(ctx.db, configured, BATCH);
    if (sessions.length === 0) break;
    const now = ctx.clock.now();
    // Another instance's pass may end the same sessions meanwhile: each is ended by one of them.
    const endedNow = await announceSessions(
      ctx.events,
      ctx.db,
      sessions.map((session) => sessionEnded(session.vpnProto, session, now, 0, 0, 'lost')),
    );
    ended += endedNow;
    if (endedNow > 0)
      ctx.logger.warn(
        { nodes: [...new Set(sessions.map((session) => session.nodeNumber))], sessions: endedNow },
        `ended ${endedNow} open session(s) of nodes no longer configured, as lost`,
      );
    if (sessions.length < BATCH) break;
  }
  return ended;
}
