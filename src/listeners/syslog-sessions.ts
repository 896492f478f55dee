// Syslog for SIEMs and User-ID firewalls (`accounting.syslog`): one RFC 5424 message to every
// collector per session start and stop, once the change that recorded it committed, so a
// firewall never maps an address to a session that did not happen. Messages leave in the order
// of their events (one after the other, each after its device was read). The device is the
// configuration's at the time of the message: a stop after its configuration was deleted (a
// revocation ends the session after it) names none. Where the node does deterministic NAT at the
// message's time (the mapping in force then, from the NAT history), the message names the public
// address and ports of the session's IPv4 tunnel address; each change of a node's mapping
// (`node.nat_changed`) is a message of its own, in the same order.
import type { Logger } from 'pino';
import type { PortalEvent, PortalEvents } from '../core/events.js';
import type { SyslogCollector } from '../core/syslog/index.js';
import { DeterministicNat } from '../net/deterministic-nat.js';
import type { NatChangeRecord, NatShare, SessionRecord } from '../protocol/syslog.js';
import { asNodeNumber } from '../shared/ids.js';
import { formatAtom } from '../shared/time.js';
import type { Db } from '../storage/database.js';
import { deviceIdOfConfiguration, deviceOfSession, devicesOfConfigurations } from '../storage/devices.js';
import { natMappingOfNodeAt } from '../storage/nat-mappings.js';

type SessionEvent = Extract<PortalEvent, { type: 'session.started' | 'session.ended' }>;
type NatChangedEvent = Extract<PortalEvent, { type: 'node.nat_changed' }>;

/**
 * Returns what a stopping portal awaits before it closes the collectors: the messages of the
 * events heard so far made and handed to them (a message made after they closed is lost).
 */
export function sendSessionsToSyslog(
  events: PortalEvents,
  db: Db,
  collectors: readonly SyslogCollector[],
  logger: Logger,
): () => Promise<void> {
  let previous: Promise<void> = Promise.resolve();
  const made = async (): Promise<void> => {
    for (let tail = previous; ; tail = previous) {
      await tail;
      if (tail === previous) return;
    }
  };
  if (collectors.length === 0) return made;
  events.afterCommit((event) => {
    if (event.type === 'node.nat_changed') {
      const record = natChangeRecord(event);
      // Caught as a session's is: a rejection left in the chain would skip every message after
      // it, and one nothing handles ends the process.
      previous = previous
        .then(() => {
          for (const collector of collectors) collector.sendNatChange(record, event.at);
        })
        .catch((error: unknown) => logger.error({ err: error, event: event.type }, 'a syslog message was not made'));
      return;
    }
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
  return made;
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
      nat: await natShare(db, configuration.nodeNumber, event.ipFour, event.at),
    };
  }
  const { session } = event;
  if (session === null) return null;
  return {
    event: 'stop',
    userId: session.userId,
    // The configuration's device, if the configuration of the key is still the session's: after
    // it was deleted the key may be another user's configuration's (a device handed on).
    deviceId: deviceOfSession((await devicesOfConfigurations(db, [event.connectionId])).get(event.connectionId), {
      userId: session.userId,
      endedAt: formatAtom(event.at),
    }),
    profileId: session.profileId,
    nodeNumber: event.nodeNumber,
    vpnProto: event.vpnProto,
    connectionId: event.connectionId,
    ipFour: session.ipFour,
    ipSix: session.ipSix,
    clientAddress: session.originatingIp,
    bytes: { in: event.bytesIn, out: event.bytesOut },
    nat: await natShare(db, event.nodeNumber, session.ipFour, event.at),
  };
}

/** The public address and ports of `ipFour` where the node's mapping in force at `at` is deterministic; else null. */
async function natShare(db: Db, nodeNumber: number, ipFour: string, at: Date): Promise<NatShare | null> {
  if (ipFour === '') return null;
  const recorded = await natMappingOfNodeAt(db, asNodeNumber(nodeNumber), formatAtom(at));
  if (recorded?.mapping.mode !== 'deterministic') return null;
  const block = new DeterministicNat(recorded.mapping.settings).blockOf(ipFour);
  return block === null
    ? null
    : { publicAddress: block.publicAddress, firstPort: block.firstPort, lastPort: block.lastPort };
}

function natChangeRecord(event: NatChangedEvent): NatChangeRecord {
  const { mapping } = event;
  return {
    nodeNumber: event.nodeNumber,
    mode: mapping.mode,
    publicAddresses: mapping.mode === 'deterministic' ? mapping.settings.publicAddresses : [],
    portsPerClient: mapping.mode === 'deterministic' ? mapping.settings.portsPerClient : null,
    appliedAt: event.appliedAt,
  };
}
