// `vpn-portal admin device …`: registering, listing, showing, suspending, resuming and retiring
// managed devices.
import type { DeviceHistoryEntryInfo, DeviceInfo } from '../../protocol/admin-api.js';
import { param } from '../../protocol/admin-api-params.js';
import { isPlatform, type Platform, PLATFORMS } from '../../shared/platforms.js';
import { formatTable } from '../table.js';
import { type AdminCommand, type Output, pageFlags, stateFlag, UsageError } from './command.js';
import { reportRevocation } from './revocations.js';

export const DEVICE_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  'device register': {
    summary: 'register a managed device of a user by --serial or --mdm-id (an extension)',
    args: ['USER', 'PROFILE', 'PLATFORM'],
    flags: ['serial', 'mdmId'],
    run: async ({ client, args, flags, json, out }) => {
      const [user = '', profile = '', platform = ''] = args;
      const device = await client.registerDevice({
        user_id: user,
        profile_id: profile,
        platform: platformOf(platform, 'PLATFORM'),
        ...(flags.serial === undefined ? {} : { serial: flags.serial }),
        ...(flags.mdmId === undefined ? {} : { mdm_id: flags.mdmId }),
      });
      if (json) out.print(JSON.stringify({ device }));
      else
        out.print(
          `registered device ${device.device_id} of ${device.user_id} (${device.platform}) in ${device.profile_id}`,
        );
    },
  },
  'device list': {
    summary: 'the registered devices, with filters (an extension)',
    args: [],
    flags: ['user', 'profile', 'platform', 'state', 'serial', 'mdmId', 'limit', 'cursor'],
    run: async ({ client, flags, json, out }) => {
      const state = stateFlag(param.deviceState.options, flags.state);
      const { limit, cursor } = pageFlags(flags);
      const page = await client.devices({
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(flags.profile === undefined ? {} : { profile_id: flags.profile }),
        ...(flags.platform === undefined ? {} : { platform: platformOf(flags.platform, '--platform') }),
        ...(state === undefined ? {} : { state }),
        ...(flags.serial === undefined ? {} : { serial: flags.serial }),
        ...(flags.mdmId === undefined ? {} : { mdm_id: flags.mdmId }),
        ...(limit === undefined ? {} : { limit }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      if (json) {
        out.print(JSON.stringify(page));
        return;
      }
      out.print(
        formatTable(
          [
            'DEVICE',
            'USER',
            'PROFILE',
            'PLATFORM',
            'SERIAL',
            'MDM_ID',
            'STATE',
            'IDENTITY',
            'CONFIGURATIONS',
            'LAST_SEEN',
          ],
          page.devices.map((device) => [
            device.device_id,
            device.user_id,
            device.profile_id,
            device.platform,
            device.serial ?? '',
            device.mdm_id ?? '',
            device.state,
            device.identity,
            String(device.configurations.length),
            device.last_seen_at ?? '',
          ]),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
  'device show': {
    summary: 'one device: its identity, state, configurations and the history of its state (an extension)',
    args: ['DEVICE_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const answer = await client.deviceWithHistory(args[0] ?? '');
      if (json) out.print(JSON.stringify(answer));
      else printDevice(answer.device, out, answer.history);
    },
  },
  'device retire': {
    summary:
      'retire a device for good: its configurations leave the nodes; prints what the revocation receipt says (--wait: until decided; an extension)',
    args: ['DEVICE_ID'],
    flags: ['wait'],
    run: async ({ client, args, flags, json, out }) => {
      const { device, revocationId } = await client.retireDeviceWithReceipt(args[0] ?? '');
      await reportRevocation(
        client,
        revocationId,
        flags.wait,
        json,
        out,
        `retired device ${device.device_id} at ${device.retired_at ?? ''}`,
        { device },
      );
    },
  },
  'device suspend': {
    summary:
      'suspend a device: its configurations leave the nodes until it is resumed (--reason, default administrator); prints what the revocation receipt says (--wait: until decided; an extension)',
    args: ['DEVICE_ID'],
    flags: ['reason', 'wait'],
    run: async ({ client, args, flags, json, out }) => {
      const { device, revocationId } = await client.suspendDevice({
        device_id: args[0] ?? '',
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
      });
      const suspension = device.suspension;
      await reportRevocation(
        client,
        revocationId,
        flags.wait,
        json,
        out,
        `suspended device ${device.device_id} (${suspension?.reason ?? ''}) since ${suspension?.since ?? ''}`,
        { device },
      );
    },
  },
  'device resume': {
    summary: 'resume a suspended device: its unexpired configurations go back on their nodes (an extension)',
    args: ['DEVICE_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const device = await client.resumeDevice(args[0] ?? '');
      if (json) out.print(JSON.stringify({ device }));
      else out.print(`device ${device.device_id} is ${device.state}`);
    },
  },
};

/** A platform flag or argument, checked against the list the portal takes. */
function platformOf(value: string, what: string): Platform {
  if (!isPlatform(value)) throw new UsageError(`${what} must be one of ${PLATFORMS.join(', ')}, not "${value}"`);
  return value;
}

function printDevice(device: DeviceInfo, out: Output, history: readonly DeviceHistoryEntryInfo[] = []): void {
  out.print(
    formatTable(
      ['FIELD', 'VALUE'],
      [
        ['device_id', device.device_id],
        ['user', device.user_id],
        ['profile', device.profile_id],
        ['platform', device.platform],
        ['serial', device.serial ?? ''],
        ['mdm_id', device.mdm_id ?? ''],
        ['identity', device.identity],
        ['state', device.state],
        ...(device.suspension === null
          ? []
          : [device.suspension, ...device.suspension.other_reasons].map((suspension, index) => [
              index === 0 ? 'suspended' : 'also suspended',
              `${suspension.reason}, since ${suspension.since}, by ${suspension.by}`,
            ])),
        ['created', device.created_at],
        ['retired', device.retired_at ?? ''],
        ['last_seen', device.last_seen_at ?? ''],
        ...device.configurations.map((configuration) => [
          'configuration',
          `${configuration.profile_id} ${configuration.vpn_proto} ${configuration.connection_id} until ${configuration.expires_at}`,
        ]),
        ...history.map((entry) => ['history', historyLine(entry)]),
      ],
    ),
  );
}

/** "2026-11-29T10:00:00+00:00 suspended active → suspended (lost) by helpdesk": one change of the device's state. */
function historyLine(entry: DeviceHistoryEntryInfo): string {
  const states = entry.state_before === null ? entry.state_after : `${entry.state_before} → ${entry.state_after}`;
  return `${entry.at} ${entry.change} ${states}${entry.reason === null ? '' : ` (${entry.reason})`} by ${entry.by ?? 'not recorded'}`;
}
