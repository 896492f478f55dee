// `vpn-portal admin` commands that read the portal's records: connection history, who had an
// address, statistics and the audit log.
import { formatTable } from '../table.js';
import { type AdminCommand, pageFlags, UsageError } from './command.js';

export const LOG_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  history: {
    summary: 'the connection history, newest first (an extension)',
    args: [],
    flags: ['user', 'profile', 'since', 'until', 'limit', 'cursor', 'open', 'closed'],
    run: async ({ client, flags, json, out }) => {
      if (flags.open && flags.closed) throw new UsageError('history takes --open or --closed, not both');
      const page = await client.connectionLog({
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(flags.profile === undefined ? {} : { profile_id: flags.profile }),
        ...(flags.since === undefined ? {} : { since: flags.since }),
        ...(flags.until === undefined ? {} : { until: flags.until }),
        ...(flags.limit === undefined ? {} : { limit: flags.limit }),
        ...(flags.cursor === undefined ? {} : { cursor: flags.cursor }),
        ...(flags.open ? { open: 'yes' as const } : flags.closed ? { open: 'no' as const } : {}),
      });
      if (json) {
        out.print(JSON.stringify(page));
        return;
      }
      out.print(
        formatTable(
          [
            'USER',
            'PROFILE',
            'PROTO',
            'NODE',
            'FROM',
            'CONNECTED',
            'DISCONNECTED',
            'BYTES_IN',
            'BYTES_OUT',
            'CONNECTION_ID',
          ],
          page.connection_log.map((entry) => [
            entry.user_id,
            entry.profile_id,
            entry.vpn_proto,
            String(entry.node_number),
            entry.originating_ip ?? '',
            entry.connected_at,
            entry.disconnected_at ?? 'open',
            entry.bytes_in === null ? '' : String(entry.bytes_in),
            entry.bytes_out === null ? '' : String(entry.bytes_out),
            entry.connection_id,
          ]),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
  'who-had': {
    summary:
      'who had a tunnel address (IPv4 or IPv6), or came from a client address, at a moment: user, profile, configuration, node, connected and disconnected (an extension; without --at every session of the address)',
    args: ['IP'],
    flags: ['at', 'reason', 'limit', 'cursor'],
    run: async ({ client, args, flags, json, out }) => {
      const ip = args[0] ?? '';
      const page = await client.connectionLog({
        ip,
        ...(flags.at === undefined ? {} : { at: flags.at }),
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
        ...(flags.limit === undefined ? {} : { limit: flags.limit }),
        ...(flags.cursor === undefined ? {} : { cursor: flags.cursor }),
      });
      if (json) {
        out.print(JSON.stringify(page));
        return;
      }
      if (page.connection_log.length === 0) {
        out.print(`nobody had ${ip}${flags.at === undefined ? '' : ` at ${flags.at}`}`);
        return;
      }
      out.print(
        formatTable(
          ['USER', 'PROFILE', 'CONNECTION_ID', 'NODE', 'CONNECTED', 'DISCONNECTED', 'IP_FOUR', 'IP_SIX', 'CLIENT_IP'],
          page.connection_log.map((entry) => [
            entry.user_id,
            entry.profile_id,
            entry.connection_id,
            String(entry.node_number),
            entry.connected_at,
            entry.disconnected_at ?? 'open',
            entry.ip_four,
            entry.ip_six,
            entry.originating_ip ?? '',
          ]),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
  stats: {
    summary: 'daily usage per profile (an extension)',
    args: [],
    flags: ['profile', 'since', 'until'],
    run: async ({ client, flags, json, out }) => {
      const stats = await client.stats({
        ...(flags.profile === undefined ? {} : { profile_id: flags.profile }),
        ...(flags.since === undefined ? {} : { since: flags.since }),
        ...(flags.until === undefined ? {} : { until: flags.until }),
      });
      if (json) {
        out.print(JSON.stringify({ stats }));
        return;
      }
      out.print(
        formatTable(
          ['PROFILE', 'DATE', 'MAX_CONNECTIONS', 'UNIQUE_USERS'],
          Object.entries(stats).flatMap(([profile, days]) =>
            days.map((day) => [profile, day.date, String(day.max_connection_count), String(day.unique_user_count)]),
          ),
        ),
      );
    },
  },
  audit: {
    summary: 'the Admin API calls made, refused or failed, newest first (an extension; needs a key of scope admin)',
    args: [],
    flags: ['user', 'keyName', 'since', 'until', 'limit', 'cursor'],
    run: async ({ client, flags, json, out }) => {
      const page = await client.auditLog({
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(flags.keyName === undefined ? {} : { key: flags.keyName }),
        ...pageFlags(flags),
      });
      if (json) {
        out.print(JSON.stringify(page));
        return;
      }
      out.print(
        formatTable(
          ['AT', 'KEY', 'FROM', 'CALL', 'STATUS', 'REPEATED', 'USER', 'CONNECTIONS', 'PARAMETERS', 'DETAIL'],
          page.audit_log.map((entry) => [
            entry.at,
            entry.key_name ?? '(no valid key)',
            entry.source_address,
            entry.call,
            String(entry.status),
            // Further refusals of the same source and reason in that minute; blank for none.
            entry.repeated === 0 ? '' : `+${entry.repeated}`,
            entry.user_id ?? '',
            entry.connection_ids.join(','),
            Object.entries(entry.parameters)
              .filter(([name]) => name !== 'user_id')
              .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
              .join(' '),
            entry.detail ?? '',
          ]),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
};
