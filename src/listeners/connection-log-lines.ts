// The reference's syslog connection lines (`Log.syslogConnectionEvents`, reference §9.4),
// written to the portal's log (journald under systemd): `CONNECT alice (employees:KEY)
// [198.51.100.7 => 10.0.0.2,fd00::2]` and `DISCONNECT alice (employees:KEY)`. The client's
// address is written only with `Log.originatingIp` (else `*`): it is personal data. A user id
// may hold spaces, brackets and `=>`, so the line's text cannot always be read back; each value
// is also a field of its own in the JSON line, which a log reader should take instead.
import type { Logger } from 'pino';
import type { PortalEvents } from '../core/events.js';

export function writeConnectionLogLines(
  events: PortalEvents,
  options: { readonly originatingIp: boolean },
  logger: Logger,
): void {
  events.afterCommit((event) => {
    if (event.type === 'session.started') {
      const { configuration } = event;
      const origin = options.originatingIp && event.originatingIp !== null ? event.originatingIp : '*';
      logger.info(
        {
          event: 'CONNECT',
          vpnProto: configuration.vpnProto,
          userId: configuration.userId,
          profileId: configuration.profileId,
          connectionId: configuration.connectionId,
          originatingIp: origin,
          ipFour: event.ipFour,
          ipSix: event.ipSix,
        },
        `CONNECT ${configuration.userId} (${configuration.profileId}:${configuration.connectionId}) [${origin} => ${event.ipFour},${event.ipSix}]`,
      );
    } else if (event.type === 'session.ended') {
      const user = event.session?.userId ?? '?';
      const profile = event.session?.profileId ?? '?';
      logger.info(
        {
          event: 'DISCONNECT',
          vpnProto: event.vpnProto,
          userId: user,
          profileId: profile,
          connectionId: event.connectionId,
        },
        `DISCONNECT ${user} (${profile}:${event.connectionId})`,
      );
    }
  });
}
