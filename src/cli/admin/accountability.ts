// `vpn-portal admin` commands for abuse reports and records kept for an investigation: who held
// an address (through a node's NAT), and legal holds.
import { formatTable } from '../table.js';
import { type AdminCommand, UsageError } from './command.js';

export const ATTRIBUTION_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  attribution: {
    summary:
      "who held an address at a moment: with --port, the node's public address and source port of an abuse report, through the node's NAT of that moment; without, a tunnel or client address (an extension; --reason is kept in the audit log)",
    args: ['IP'],
    flags: ['at', 'port', 'reason'],
    run: async ({ client, args, flags, json, out }) => {
      const ip = args[0] ?? '';
      if (flags.at === undefined)
        throw new UsageError('attribution needs --at TIME: the moment the report names', 'attribution');
      if (flags.port !== undefined && !/^\d{1,5}$/.test(flags.port))
        throw new UsageError(`--port: "${flags.port}" is not a port number`, 'attribution');
      const answer = await client.attribution({
        ip,
        at: flags.at,
        ...(flags.port === undefined ? {} : { port: Number(flags.port) }),
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
      });
      if (json) {
        out.print(JSON.stringify(answer));
        return;
      }
      const { translation } = answer;
      if (translation !== null)
        out.print(
          `node ${translation.node_number} mapped ${translation.public_address} ports ${translation.first_port}-${translation.last_port} to ${translation.client_ip} (mapping applied ${translation.mapping_applied_at})`,
        );
      out.print(
        formatTable(
          [
            'USER',
            'DEVICE',
            'PROFILE',
            'CONNECTION_ID',
            'NODE',
            'CONNECTED',
            'DISCONNECTED',
            'IP_FOUR',
            'IP_SIX',
            'CLIENT_IP',
          ],
          answer.sessions.map((session) => [
            session.user_id,
            session.device_id ?? '',
            session.profile_id,
            session.connection_id,
            String(session.node_number),
            session.connected_at,
            session.disconnected_at ?? 'open',
            session.ip_four,
            session.ip_six,
            session.originating_ip ?? '',
          ]),
        ),
      );
    },
  },
};

export const LEGAL_HOLD_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  'legal-hold create': {
    summary:
      "keeps a user's records (or a device's user's, with --device-id) past their retention until --until or a release (an extension; needs a key of scope admin)",
    args: [],
    flags: ['user', 'deviceId', 'reason', 'until'],
    run: async ({ client, flags, json, out }) => {
      if ((flags.user === undefined) === (flags.deviceId === undefined))
        throw new UsageError('name the user (--user) or the device (--device-id), one of them', 'legal-hold create');
      if (flags.reason === undefined || flags.until === undefined)
        throw new UsageError('a legal hold needs --reason and --until', 'legal-hold create');
      const hold = await client.createLegalHold({
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(flags.deviceId === undefined ? {} : { device_id: flags.deviceId }),
        reason: flags.reason,
        until: flags.until,
      });
      out.print(
        json
          ? JSON.stringify({ legal_hold: hold })
          : `${hold.hold_id}: ${hold.user_id}'s records kept until ${hold.until}`,
      );
    },
  },
  'legal-hold list': {
    summary: 'every legal hold, newest first, with its state (an extension; needs a key of scope admin)',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const holds = await client.legalHolds();
      if (json) {
        out.print(JSON.stringify({ legal_holds: holds }));
        return;
      }
      out.print(
        formatTable(
          ['HOLD_ID', 'USER', 'DEVICE', 'STATE', 'CREATED', 'UNTIL', 'RELEASED', 'REASON'],
          holds.map((hold) => [
            hold.hold_id,
            hold.user_id,
            hold.device_id ?? '',
            hold.state,
            hold.created_at,
            hold.until,
            hold.released_at ?? '',
            hold.reason,
          ]),
        ),
      );
    },
  },
  'legal-hold release': {
    summary:
      'ends a legal hold now: the next housekeeping applies the retentions to its records (an extension; needs a key of scope admin)',
    args: ['HOLD_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const hold = await client.releaseLegalHold(args[0] ?? '');
      out.print(json ? JSON.stringify({ legal_hold: hold }) : `${hold.hold_id}: released at ${hold.released_at ?? ''}`);
    },
  },
};
