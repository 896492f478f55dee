// `vpn-portal admin …`: the Admin API from the command line, built on the typed client. Tables
// for people, `--json` for scripts, and exit codes a script can rely on: 0 done, 1 the portal
// answered with an error, 2 a usage or configuration mistake, 3 the portal could not be reached.
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import QRCode from 'qrcode';
import { AdminApiClient, AdminApiError, type CreatedConfiguration } from '../admin-client/admin-api-client.js';
import { CONFIGURATION_MEDIA_TYPES, type CreateParams, type DeviceInfo } from '../protocol/admin-api.js';
import { isPlatform, PLATFORMS, type Platform } from '../protocol/platforms.js';
import { ConfigError } from '../config/load.js';
import { resolveAdminTarget } from './admin-target.js';
import { formatTable } from './table.js';
import { ADMIN_USAGE } from './usage.js';

export const ADMIN_EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const;

/** `--format` values and the media type each asks `create` for. */
const FORMATS = {
  wireguard: CONFIGURATION_MEDIA_TYPES.wireguard,
  'wireguard-tcp': CONFIGURATION_MEDIA_TYPES['wireguard+tcp'],
  openvpn: CONFIGURATION_MEDIA_TYPES.openvpn,
  apple: CONFIGURATION_MEDIA_TYPES.apple,
} as const;
type FormatName = keyof typeof FORMATS;

interface Output {
  readonly print: (text: string) => void;
  readonly printError: (text: string) => void;
}

interface Invocation {
  readonly client: AdminApiClient;
  readonly args: readonly string[];
  readonly flags: AdminFlags;
  readonly json: boolean;
  readonly out: Output;
}

interface AdminFlags {
  readonly all: boolean;
  readonly format: string | undefined;
  readonly displayName: string | undefined;
  readonly expiresIn: string | undefined;
  readonly preferTcp: boolean;
  readonly output: string | undefined;
  readonly qr: boolean;
  readonly user: string | undefined;
  readonly profile: string | undefined;
  readonly since: string | undefined;
  readonly until: string | undefined;
  readonly limit: string | undefined;
  readonly cursor: string | undefined;
  readonly open: boolean;
  readonly closed: boolean;
  readonly keyName: string | undefined;
  readonly publicKey: string | undefined;
  /** A file holding a PEM certificate request. */
  readonly csr: string | undefined;
  readonly description: string | undefined;
  readonly overlap: string | undefined;
  readonly webhook: string | undefined;
  readonly eventType: string | undefined;
  readonly state: string | undefined;
  readonly uses: string | undefined;
  readonly validFor: string | undefined;
  readonly platform: string | undefined;
  readonly serial: string | undefined;
  readonly mdmId: string | undefined;
}

interface AdminCommand {
  /** Positional arguments, by name, for the usage message. */
  readonly args: readonly string[];
  /** Flags beyond the common ones that the command accepts. */
  readonly flags: readonly (keyof AdminFlags)[];
  run(call: Invocation): Promise<void>;
}

/**
 * Every `vpn-portal admin` command: the eleven calls of the specification, then this portal's
 * extensions (connection history, statistics, audit log, renewal, `webhook …`), one entry each.
 */
const COMMANDS: Readonly<Record<string, AdminCommand>> = {
  users: {
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const users = await client.users();
      out.print(
        json
          ? JSON.stringify({ users })
          : formatTable(
              ['USER'],
              users.map((user) => [user]),
            ),
      );
    },
  },
  'disabled-users': {
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const users = await client.disabledUsers();
      out.print(
        json
          ? JSON.stringify({ disabled_users: users })
          : formatTable(
              ['USER'],
              users.map((user) => [user]),
            ),
      );
    },
  },
  configurations: {
    args: ['USER'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const list = await client.userConfigurationList(args[0] ?? '');
      if (json) out.print(JSON.stringify({ user_configuration_list: list }));
      else
        out.print(
          formatTable(
            ['CONNECTION_ID', 'PROFILE', 'PROTO', 'EXPIRES', 'DISPLAY_NAME'],
            list.map((entry) => [entry.connection_id, entry.profile_id, entry.vpn_proto, entry.expires_at, entry.display_name]),
          ),
        );
    },
  },
  connections: {
    args: [],
    flags: ['all'],
    run: async ({ client, flags, json, out }) => {
      const byProfile = await client.connectionList(flags.all);
      if (json) {
        out.print(JSON.stringify({ connection_list: byProfile }));
        return;
      }
      const rows = Object.entries(byProfile).flatMap(([profileId, connections]) =>
        connections.map((entry) => [profileId, entry.user_id, entry.vpn_proto, entry.connection_id, entry.ip_list.join(','), entry.display_name]),
      );
      out.print(formatTable(['PROFILE', 'USER', 'PROTO', 'CONNECTION_ID', 'IP', 'DISPLAY_NAME'], rows));
    },
  },
  'connected-users': {
    args: [],
    flags: ['all'],
    run: async ({ client, flags, json, out }) => {
      const byProfile = await client.connectedUsers(flags.all);
      if (json) {
        out.print(JSON.stringify({ connected_users: byProfile }));
        return;
      }
      const rows = Object.entries(byProfile).flatMap(([profileId, users]) => users.map((user) => [profileId, user]));
      out.print(formatTable(['PROFILE', 'USER'], rows));
    },
  },
  create: {
    args: ['USER', 'PROFILE'],
    flags: ['format', 'displayName', 'expiresIn', 'preferTcp', 'output', 'qr', 'publicKey', 'csr'],
    run: runCreate,
  },
  extend: {
    args: ['USER', 'CONNECTION_ID'],
    flags: ['expiresIn', 'output'],
    run: async ({ client, args, flags, json, out }) => {
      const [user = '', connectionId = ''] = args;
      const extended = await client.extend({
        user_id: user,
        connection_id: connectionId,
        ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
      });
      // An OpenVPN renewal brings the new certificate for the device's key: to FILE, or printed.
      if (flags.output !== undefined && extended.certificate !== null) writeFileSync(flags.output, `${extended.certificate}\n`, { flag: 'w' });
      if (json) {
        out.print(JSON.stringify(extended));
        return;
      }
      out.print(`extended ${connectionId} of ${user} until ${extended.expires_at}`);
      if (extended.certificate === null) return;
      if (flags.output === undefined) out.print(extended.certificate);
      else out.print(`wrote the new certificate to ${flags.output}; it replaces the <cert> block of the device's file`);
    },
  },
  'enrollment-token': {
    args: ['USER', 'PROFILE'],
    flags: ['uses', 'validFor', 'expiresIn', 'displayName'],
    run: async ({ client, args, flags, json, out }) => {
      const [user = '', profile = ''] = args;
      const uses = flags.uses === undefined ? undefined : Number(flags.uses);
      if (uses !== undefined && !(Number.isInteger(uses) && uses >= 1)) throw new UsageError(`--uses: "${flags.uses}" is not a number of uses (1–1000)`);
      const made = await client.enrollmentToken({
        user_id: user,
        profile_id: profile,
        ...(uses === undefined ? {} : { uses }),
        ...(flags.validFor === undefined ? {} : { valid_for: flags.validFor }),
        ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
        ...(flags.displayName === undefined ? {} : { display_name: flags.displayName }),
      });
      if (json) {
        out.print(JSON.stringify(made));
        return;
      }
      // As for admin keys: the token alone on the last line, for `| tail -n 1`.
      out.print(`enrollment token ${made.token_id} for ${user} in ${profile}: ${made.uses} use${made.uses === 1 ? '' : 's'}, until ${made.expires_at}`);
      out.print('this is the only time the token is shown (the portal keeps only a hash):');
      out.print(made.enrollment_token);
    },
  },
  'enrollment-tokens': {
    args: [],
    flags: ['user'],
    run: async ({ client, flags, json, out }) => {
      const tokens = await client.enrollmentTokens(flags.user);
      if (json) {
        out.print(JSON.stringify({ enrollment_tokens: tokens }));
        return;
      }
      out.print(
        formatTable(
          ['TOKEN_ID', 'USER', 'PROFILE', 'STATE', 'USES_LEFT', 'EXPIRES', 'CREATED_BY', 'LAST_USED'],
          tokens.map((token) => [
            token.token_id,
            token.user_id,
            token.profile_id,
            token.state,
            `${token.uses_left}/${token.uses}`,
            token.expires_at,
            token.created_by ?? '',
            token.last_used_at ?? '',
          ]),
        ),
      );
    },
  },
  'revoke-enrollment-token': {
    args: ['USER', 'TOKEN_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const [user = '', tokenId = ''] = args;
      await client.revokeEnrollmentToken(user, tokenId);
      out.print(json ? JSON.stringify({ ok: true }) : `revoked enrollment token ${tokenId} of ${user}`);
    },
  },
  disable: userCommand('disabled', (client, user) => client.disableUser(user)),
  enable: userCommand('enabled', (client, user) => client.enableUser(user)),
  destroy: userCommand('destroyed', (client, user) => client.destroy(user)),
  'delete-authorizations': userCommand('deleted the authorizations of', (client, user) => client.deleteUserAuthorizations(user)),
  'delete-connection': {
    args: ['USER', 'CONNECTION_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const [user = '', connectionId = ''] = args;
      // The client form-encodes the id: a public key's `+` and `/` arrive as they are.
      await client.deleteConnection(user, connectionId);
      out.print(json ? JSON.stringify({ ok: true }) : `deleted connection ${connectionId} of ${user}`);
    },
  },
  history: {
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
          ['USER', 'PROFILE', 'PROTO', 'NODE', 'FROM', 'CONNECTED', 'DISCONNECTED', 'BYTES_IN', 'BYTES_OUT', 'CONNECTION_ID'],
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
  stats: {
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
          ['AT', 'KEY', 'FROM', 'CALL', 'STATUS', 'USER', 'CONNECTIONS', 'PARAMETERS', 'DETAIL'],
          page.audit_log.map((entry) => [
            entry.at,
            entry.key_name ?? '(no valid key)',
            entry.source_address,
            entry.call,
            String(entry.status),
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
  'webhook create': {
    args: ['URL', 'TYPES'],
    flags: ['description'],
    run: async ({ client, args, flags, json, out }) => {
      const [url = '', types = ''] = args;
      const created = await client.createWebhook({ url, event_types: types, ...(flags.description === undefined ? {} : { description: flags.description }) });
      if (json) {
        out.print(JSON.stringify(created));
        return;
      }
      out.print(`created webhook ${created.webhook.webhook_id} for ${created.webhook.event_types.join(',')} to ${created.webhook.url}`);
      out.print('this is the only time the signing secret is shown; store it with the receiver now:');
      out.print(created.secret);
    },
  },
  'webhook list': {
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const webhooks = await client.webhooks();
      out.print(
        json
          ? JSON.stringify({ webhooks })
          : formatTable(
              ['ID', 'URL', 'EVENTS', 'CREATED', 'OLD_SECRET_UNTIL', 'DESCRIPTION'],
              webhooks.map((webhook) => [
                webhook.webhook_id,
                webhook.url,
                webhook.event_types.join(','),
                webhook.created_at,
                webhook.previous_secret_until ?? '',
                webhook.description ?? '',
              ]),
            ),
      );
    },
  },
  'webhook delete': {
    args: ['ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      await client.deleteWebhook(args[0] ?? '');
      out.print(json ? JSON.stringify({ ok: true }) : `deleted webhook ${args[0] ?? ''}`);
    },
  },
  'webhook rotate': {
    args: ['ID'],
    flags: ['overlap'],
    run: async ({ client, args, flags, json, out }) => {
      const rotated = await client.rotateWebhookSecret(args[0] ?? '', flags.overlap);
      if (json) {
        out.print(JSON.stringify(rotated));
        return;
      }
      out.print(`new secret for webhook ${rotated.webhook_id}; the old one signs too until ${rotated.previous_secret_until}`);
      out.print('this is the only time it is shown:');
      out.print(rotated.secret);
    },
  },
  'webhook test': {
    args: ['ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const result = await client.testWebhook(args[0] ?? '');
      if (json) out.print(JSON.stringify(result));
      else
        out.print(
          `${result.outcome}${result.status === null ? '' : ` ${result.status}`} in ${result.duration_ms} ms${result.detail === null ? '' : `: ${result.detail}`}`,
        );
      // A receiver that did not take the test event is a failure a script should see.
      if (result.outcome !== 'delivered') throw new TestNotDelivered();
    },
  },
  'device register': {
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
      else out.print(`registered device ${device.device_id} of ${device.user_id} (${device.platform}) in ${device.profile_id}`);
    },
  },
  'device list': {
    args: [],
    flags: ['user', 'profile', 'platform', 'state', 'serial', 'mdmId', 'limit', 'cursor'],
    run: async ({ client, flags, json, out }) => {
      const state = flags.state;
      if (state !== undefined && !(DEVICE_STATES as readonly string[]).includes(state)) {
        throw new UsageError(`--state must be ${DEVICE_STATES.join(', ')}, not "${state}"`);
      }
      const { limit, cursor } = pageFlags(flags);
      const page = await client.devices({
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(flags.profile === undefined ? {} : { profile_id: flags.profile }),
        ...(flags.platform === undefined ? {} : { platform: platformOf(flags.platform, '--platform') }),
        ...(state === undefined ? {} : { state: state as (typeof DEVICE_STATES)[number] }),
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
          ['DEVICE', 'USER', 'PROFILE', 'PLATFORM', 'SERIAL', 'MDM_ID', 'STATE', 'IDENTITY', 'CONFIGURATIONS', 'LAST_SEEN'],
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
    args: ['DEVICE_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const device = await client.device(args[0] ?? '');
      if (json) out.print(JSON.stringify({ device }));
      else printDevice(device, out);
    },
  },
  'device retire': {
    args: ['DEVICE_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const device = await client.retireDevice(args[0] ?? '');
      if (json) out.print(JSON.stringify({ device }));
      else out.print(`retired device ${device.device_id} at ${device.retired_at ?? ''}; its configurations are gone`);
    },
  },
  'webhook deliveries': {
    args: [],
    flags: ['webhook', 'eventType', 'state', 'since', 'until', 'limit', 'cursor'],
    run: async ({ client, flags, json, out }) => {
      const paging = pageFlags(flags);
      const state = flags.state;
      if (state !== undefined && !isDeliveryState(state)) throw new UsageError(`--state must be ${DELIVERY_STATES.join(', ')}, not "${state}"`);
      const page = await client.webhookDeliveries({
        ...(flags.webhook === undefined ? {} : { webhook_id: flags.webhook }),
        ...(flags.eventType === undefined ? {} : { event_type: flags.eventType }),
        ...(state === undefined ? {} : { state }),
        ...paging,
      });
      if (json) {
        out.print(JSON.stringify(page));
        return;
      }
      out.print(
        formatTable(
          ['CREATED', 'WEBHOOK', 'EVENT', 'EVENT_ID', 'STATE', 'ATTEMPTS', 'LAST'],
          page.webhook_deliveries.map((delivery) => {
            const last = delivery.attempts[delivery.attempts.length - 1];
            return [
              delivery.created_at,
              delivery.webhook_id,
              delivery.event_type,
              delivery.event_id,
              delivery.state,
              String(delivery.attempts.length),
              last === undefined ? '' : `${last.outcome}${last.status === null ? '' : ` ${last.status}`}${last.detail === null ? '' : `: ${last.detail}`}`,
            ];
          }),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
};

const DELIVERY_STATES = ['pending', 'delivered', 'failed', 'cancelled'] as const;
const DEVICE_STATES = ['registered', 'active', 'retired'] as const;

/** A platform flag or argument, checked against the list the portal takes. */
function platformOf(value: string, what: string): Platform {
  if (!isPlatform(value)) throw new UsageError(`${what} must be one of ${PLATFORMS.join(', ')}, not "${value}"`);
  return value;
}

function printDevice(device: DeviceInfo, out: Output): void {
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
        ['created', device.created_at],
        ['retired', device.retired_at ?? ''],
        ['last_seen', device.last_seen_at ?? ''],
        ...device.configurations.map((configuration) => [
          'configuration',
          `${configuration.profile_id} ${configuration.vpn_proto} ${configuration.connection_id} until ${configuration.expires_at}`,
        ]),
      ],
    ),
  );
}

/** `--since`, `--until`, `--limit` (checked: a positive number) and `--cursor` of a paged log, as query fields. */
function pageFlags(flags: AdminFlags): { since?: string; until?: string; limit?: number; cursor?: string } {
  if (flags.limit !== undefined && !/^[1-9]\d*$/.test(flags.limit)) throw new UsageError(`--limit: "${flags.limit}" is not a positive number`);
  return {
    ...(flags.since === undefined ? {} : { since: flags.since }),
    ...(flags.until === undefined ? {} : { until: flags.until }),
    ...(flags.limit === undefined ? {} : { limit: Number(flags.limit) }),
    ...(flags.cursor === undefined ? {} : { cursor: flags.cursor }),
  };
}

function isDeliveryState(state: string): state is (typeof DELIVERY_STATES)[number] {
  return (DELIVERY_STATES as readonly string[]).includes(state);
}

/** `webhook test` reached the portal, but the receiver did not take the event: exit code 1. */
class TestNotDelivered extends Error {
  override readonly name = 'TestNotDelivered';
}

function userCommand(done: string, call: (client: AdminApiClient, user: string) => Promise<void>): AdminCommand {
  return {
    args: ['USER'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const user = args[0] ?? '';
      await call(client, user);
      out.print(json ? JSON.stringify({ ok: true }) : `${done} ${user}`);
    },
  };
}

async function runCreate({ client, args, flags, json, out }: Invocation): Promise<void> {
  const [user = '', profile = ''] = args;
  // A QR code is for the WireGuard app on a phone: default to the WireGuard file then.
  const formatName = flags.format ?? (flags.qr ? 'wireguard' : undefined);
  if (formatName !== undefined && !(formatName in FORMATS)) {
    throw new UsageError(`--format must be ${Object.keys(FORMATS).join(', ')}, not "${formatName}"`);
  }
  const format = formatName as FormatName | undefined;
  if (flags.qr && format !== 'wireguard' && format !== 'wireguard-tcp') throw new UsageError('--qr needs a WireGuard format (wireguard or wireguard-tcp)');
  const params: CreateParams = {
    user_id: user,
    profile_id: profile,
    ...(flags.displayName === undefined ? {} : { display_name: flags.displayName }),
    ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
    ...(flags.preferTcp ? { prefer_tcp: 'yes' as const } : {}),
    ...(flags.publicKey === undefined ? {} : { public_key: flags.publicKey }),
    ...(flags.csr === undefined ? {} : { csr: readCsr(flags.csr) }),
  };
  const created = await client.create(params, format === undefined ? undefined : FORMATS[format]);
  // The file holds a private key: only its owner may read it.
  if (flags.output !== undefined) writeFileSync(flags.output, created.body, { mode: 0o600, flag: 'w' });
  if (flags.qr) {
    out.print(await QRCode.toString(created.body, { type: 'terminal', small: true }));
    return;
  }
  if (json) {
    out.print(JSON.stringify(describeCreated(created, flags.output)));
    return;
  }
  if (flags.output === undefined) out.print(created.body.replace(/\n$/, ''));
  else out.print(`wrote ${flags.output} (${created.contentType}, expires ${created.expiresAt.toISOString()})`);
}

function readCsr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--csr: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

function describeCreated(created: CreatedConfiguration, file: string | undefined): Record<string, unknown> {
  return {
    content_type: created.contentType,
    expires_at: created.expiresAt.toISOString(),
    file_name: created.fileName,
    ...(file === undefined ? { configuration: created.body } : { file }),
  };
}

class UsageError extends Error {
  override readonly name = 'UsageError';
}

const FLAG_NAMES: Readonly<Record<keyof AdminFlags, string>> = {
  all: '--all',
  format: '--format',
  displayName: '--display-name',
  expiresIn: '--expires-in',
  preferTcp: '--prefer-tcp',
  output: '-o',
  qr: '--qr',
  user: '--user',
  profile: '--profile',
  since: '--since',
  until: '--until',
  limit: '--limit',
  cursor: '--cursor',
  open: '--open',
  closed: '--closed',
  keyName: '--key-name',
  publicKey: '--public-key',
  csr: '--csr',
  description: '--description',
  overlap: '--overlap',
  webhook: '--webhook',
  eventType: '--event-type',
  state: '--state',
  uses: '--uses',
  validFor: '--valid-for',
  platform: '--platform',
  serial: '--serial',
  mdmId: '--mdm-id',
};

/** Runs `vpn-portal admin ARGS`; returns the exit code. */
export async function runAdminCommand(argv: readonly string[], env: NodeJS.ProcessEnv, out: Output): Promise<number> {
  let json = argv.includes('--json');
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        url: { type: 'string' },
        'key-file': { type: 'string' },
        config: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        all: { type: 'boolean' },
        format: { type: 'string' },
        'display-name': { type: 'string' },
        'expires-in': { type: 'string' },
        'prefer-tcp': { type: 'boolean' },
        output: { type: 'string', short: 'o' },
        qr: { type: 'boolean' },
        user: { type: 'string' },
        profile: { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
        open: { type: 'boolean' },
        closed: { type: 'boolean' },
        'key-name': { type: 'string' },
        'public-key': { type: 'string' },
        csr: { type: 'string' },
        description: { type: 'string' },
        overlap: { type: 'string' },
        webhook: { type: 'string' },
        'event-type': { type: 'string' },
        state: { type: 'string' },
        uses: { type: 'string' },
        'valid-for': { type: 'string' },
        platform: { type: 'string' },
        serial: { type: 'string' },
        'mdm-id': { type: 'string' },
      },
    });
    json = values.json === true;
    // `webhook SUBCOMMAND …` and `device SUBCOMMAND …` are one command of two words.
    const [first, ...rest] = positionals;
    const [name, args] = (first === 'webhook' || first === 'device') && rest[0] !== undefined ? [`${first} ${rest[0]}`, rest.slice(1)] : [first, rest];
    if (values.help === true || name === undefined || name === 'help') {
      (name === undefined && values.help !== true ? out.printError : out.print)(ADMIN_USAGE);
      return name === undefined && values.help !== true ? ADMIN_EXIT.usage : ADMIN_EXIT.ok;
    }
    const command = COMMANDS[name];
    if (command === undefined) throw new UsageError(`unknown admin command "${name}"`);
    if (args.length !== command.args.length) {
      throw new UsageError(`admin ${name} takes ${command.args.length === 0 ? 'no arguments' : command.args.join(' ')}`);
    }
    const flags: AdminFlags = {
      all: values.all === true,
      format: values.format,
      displayName: values['display-name'],
      expiresIn: values['expires-in'],
      preferTcp: values['prefer-tcp'] === true,
      output: values.output,
      qr: values.qr === true,
      user: values.user,
      profile: values.profile,
      since: values.since,
      until: values.until,
      limit: values.limit,
      cursor: values.cursor,
      open: values.open === true,
      closed: values.closed === true,
      keyName: values['key-name'],
      publicKey: values['public-key'],
      csr: values.csr,
      description: values.description,
      overlap: values.overlap,
      webhook: values.webhook,
      eventType: values['event-type'],
      state: values.state,
      uses: values.uses,
      validFor: values['valid-for'],
      platform: values.platform,
      serial: values.serial,
      mdmId: values['mdm-id'],
    };
    for (const key of Object.keys(FLAG_NAMES) as (keyof AdminFlags)[]) {
      const given = flags[key] !== undefined && flags[key] !== false;
      if (given && !command.flags.includes(key)) throw new UsageError(`admin ${name} does not take ${FLAG_NAMES[key]}`);
    }
    const target = resolveAdminTarget({ url: values.url, keyFile: values['key-file'], config: values.config, env });
    const client = new AdminApiClient({ baseUrl: target.baseUrl, key: target.key });
    await command.run({ client, args, flags, json, out });
    return ADMIN_EXIT.ok;
  } catch (error) {
    return reportFailure(error, json, out);
  }
}

function reportFailure(error: unknown, json: boolean, out: Output): number {
  const say = (code: number, message: string, status?: number): number => {
    out.printError(json ? JSON.stringify({ error: message, ...(status === undefined ? {} : { status }) }) : `vpn-portal admin: ${message}`);
    return code;
  };
  if (error instanceof AdminApiError) return say(ADMIN_EXIT.refused, `${error.status} ${error.message}`, error.status);
  if (error instanceof TestNotDelivered) return ADMIN_EXIT.refused;
  if (error instanceof UsageError || isParseArgsError(error)) {
    const message = (error as Error).message;
    return say(ADMIN_EXIT.usage, json ? message : `${message}\n${ADMIN_USAGE}`);
  }
  if (error instanceof ConfigError) return say(ADMIN_EXIT.usage, error.message);
  // fetch failed: refused, no route, a name that does not resolve, TLS, timeout.
  if (error instanceof Error && (error.name === 'TimeoutError' || error.message === 'fetch failed')) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? cause.message : error.message;
    return say(ADMIN_EXIT.unreachable, `cannot reach the portal: ${detail}`);
  }
  throw error;
}

function isParseArgsError(error: unknown): boolean {
  return error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS');
}
