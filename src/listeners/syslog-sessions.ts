// Syslog for SIEMs and User-ID firewalls (`accounting.syslog`): one RFC 5424 message to every
// collector per session start and stop, once the change that recorded it committed, so a
// firewall never maps an address to a session that did not happen. Messages leave in the order
// of their events (one after the other, each after its device was read). The device is the
// configuration's at the time of the message: a stop after its configuration was deleted (a
// revocation ends the session after it) names none.
import type { Logger } from 'pino';
import type { PortalEvent, PortalEvents } from '../core/events.js';
import type { SyslogCollector } from '../core/syslog/index.js';
import type { SessionRecord } from '../protocol/syslog.js';
import type { Db } from '../storage/database.js';
import { deviceIdOfConfiguration } from '../storage/devices.js';

type SessionEvent = Extract<PortalEvent, { type: 'session.started' | 'session.ended' }>;

export function sendSessionsToSyslog(
  events: PortalEvents,
  db: Db,
  collectors: readonly SyslogCollector[],
  logger: Logger,
): void {
  if (collectors.length === 0) return;
  let previous: Promise<void> = Promise.resolve();
  events.afterCommit((event) => {
    if (event.type !== 'session.started' && event.type !== 'session.ended') return;
    previous = previous
      .then(async () => {
        const record = await sessionRecord(db, event);
        if (record === null) {
          logger.debug('a session ended whose start the portal never heard of');
          return;
        }
        for (const collector of collectors) collector.sendSession(record, event.at);
      })
      .catch((error: unknown) => logger.error({ err: error, event: event.type }, 'a syslog message was not made'));
  });
}

/** What the message says of the session; null for a stop whose start the portal never recorded. */
async function sessionRecord(db: Db, event: SessionEvent): Promise<SessionRecord | null> {
  if (event.type === 'session.started') {
    const { configuration } = event;
    return {
      event: 'start',
      userId: configuration.userId,
      deviceId: await deviceIdOfConfiguration(db, configuration.vpnProto, configuration.connectionId),
      profileId: configuration.profileId,
      nodeNumber: configuration.nodeNumber,
      vpnProto: configuration.vpnProto,
      connectionId: configuration.connectionId,
      ipFour: event.ipFour,
      ipSix: event.ipSix,
      clientAddress: event.originatingIp,
    };
  }
  const { session } = event;
  if (session === null) return null;
  return {
    event: 'stop',
    userId: session.userId,
    deviceId: await deviceIdOfConfiguration(db, event.vpnProto, event.connectionId),
    profileId: session.profileId,
    nodeNumber: event.nodeNumber,
    vpnProto: event.vpnProto,
    connectionId: event.connectionId,
    ipFour: session.ipFour,
    ipSix: session.ipSix,
    clientAddress: session.originatingIp,
    bytes: { in: event.bytesIn, out: event.bytesOut },
  };
}
