// RADIUS accounting of sessions: a session that opens gets its Acct-Session-Id and its Start, one
// that closes its Stop, written into the outbox in the transaction of the session change, so a
// session that happened is reported even when the portal is killed right after, and a change
// rolled back never is. The worker (src/core/accounting/worker.ts) sends them; it is woken once
// the change committed. Registered only when `accounting.radius.servers` names a server.
import { accountSessionEnd, accountSessionStart } from '../core/accounting/index.js';
import type { PortalEvent, PortalEvents } from '../core/events.js';
import type { PortalConfig } from '../config/portal-config.js';
import { timeOrderedId } from '../shared/time-ordered-id.js';
import type { Db } from '../storage/database.js';
import { deviceIdOfConfiguration } from '../storage/devices.js';

export function writeRadiusAccounting(events: PortalEvents, config: PortalConfig, wake: () => void): void {
  const queued = new WeakSet<PortalEvent>();
  events.inTransaction(async (event, db) => {
    if (event.type !== 'session.started' && event.type !== 'session.ended') return;
    // Sessions open and close in changes; one recorded on the database alone still gets its rows together.
    if (db.isTransaction) await account(event, db);
    else await db.transaction().execute((trx) => account(event, trx));
    queued.add(event);
  });
  events.afterCommit((event) => {
    if (queued.has(event)) wake();
  });

  async function account(event: SessionEvent, db: Db): Promise<void> {
    if (event.type === 'session.started') {
      const { configuration } = event;
      await accountSessionStart(db, config, configuration.connectionId, {
        acctSessionId: timeOrderedId(event.at.getTime()),
        userId: configuration.userId,
        profileId: configuration.profileId,
        deviceId: await deviceIdOfConfiguration(db, configuration.vpnProto, configuration.connectionId),
        nodeNumber: configuration.nodeNumber,
        ipFour: event.ipFour,
        ipSix: event.ipSix,
        originatingIp: event.originatingIp,
        at: event.at,
      });
    } else {
      await accountSessionEnd(db, config, event.connectionId, event.nodeNumber, event, event.session);
    }
  }
}

type SessionEvent = Extract<PortalEvent, { type: 'session.started' | 'session.ended' }>;
