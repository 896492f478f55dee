// `vpn-portal admin …`: the Admin API from the command line, built on the typed client. Tables
// for people, `--json` for scripts, and exit codes a script can rely on: 0 done, 1 the portal
// answered with an error, 2 a usage or configuration mistake, 3 the portal could not be reached.
import { X509Certificate } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import QRCode from 'qrcode';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdminApiClient, AdminApiError, type CreatedConfiguration } from '../admin-client/admin-api-client.js';
import {
  ADMIN_SCOPES,
  CONFIGURATION_MEDIA_TYPES,
  type AdminScope,
  type CreateParams,
  type DeviceInfo,
  type RevocationInfo,
} from '../protocol/admin-api.js';
import { param } from '../protocol/admin-api-params.js';
import { ConfigError } from '../config/load.js';
import { resolveAdminTarget } from './admin-target.js';
import { describeUnknownCommand, describeUnknownOption, isParseArgsError, unknownOption } from './options.js';
import { formatTable } from './table.js';
import { isWireGuardKey, wireGuardPublicKey } from '../wireguard/keys.js';
import { ADMIN_USAGE } from './usage.js';
import { describePlatforms, isPlatform, PLATFORMS, type Platform } from '../shared/platforms.js';

/** `notApplied`: with `--wait`, the revocation receipt ended overdue (or superseded) rather than applied. */
export const ADMIN_EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3, notApplied: 3 } as const;

/** How often `--wait` asks for the receipt. */
const RECEIPT_POLL_MS = 250;

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
  /** `-o FILE` may replace an existing file. */
  readonly force: boolean;
  readonly qr: boolean;
  readonly user: string | undefined;
  readonly profile: string | undefined;
  readonly since: string | undefined;
  /** A moment (ISO 8601): who-had. */
  readonly at: string | undefined;
  readonly until: string | undefined;
  readonly limit: string | undefined;
  readonly cursor: string | undefined;
  readonly open: boolean;
  readonly closed: boolean;
  readonly keyName: string | undefined;
  /** `read`, `write` or `admin`: admin-key create. */
  readonly scope: string | undefined;
  /** Comma-separated CIDR prefixes: admin-key create. */
  readonly allow: string | undefined;
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
  /** Wait until the revocation receipt is applied (or overdue) and print it. */
  readonly wait: boolean;
  readonly platform: string | undefined;
  /** `yes` or `no`. */
  readonly onDemand: string | undefined;
  /** A registered device, by the portal's id (`dev_…`): create. */
  readonly deviceId: string | undefined;
  readonly serial: string | undefined;
  readonly mdmId: string | undefined;
}

interface AdminCommand {
  /** What the command does, for its usage. */
  readonly summary: string;
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
    summary: 'users with a configuration or an authorization',
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
    summary: 'users that are disabled',
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
    summary: "a user's configurations",
    args: ['USER'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const list = await client.userConfigurationList(args[0] ?? '');
      if (json) out.print(JSON.stringify({ user_configuration_list: list }));
      else
        out.print(
          formatTable(
            ['CONNECTION_ID', 'PROFILE', 'PROTO', 'EXPIRES', 'DISPLAY_NAME'],
            list.map((entry) => [
              entry.connection_id,
              entry.profile_id,
              entry.vpn_proto,
              entry.expires_at,
              entry.display_name,
            ]),
          ),
        );
    },
  },
  connections: {
    summary: 'connected devices (--all: every active configuration)',
    args: [],
    flags: ['all'],
    run: async ({ client, flags, json, out }) => {
      const byProfile = await client.connectionList(flags.all);
      if (json) {
        out.print(JSON.stringify({ connection_list: byProfile }));
        return;
      }
      const rows = Object.entries(byProfile).flatMap(([profileId, connections]) =>
        connections.map((entry) => [
          profileId,
          entry.user_id,
          entry.vpn_proto,
          entry.connection_id,
          entry.ip_list.join(','),
          entry.display_name,
        ]),
      );
      out.print(formatTable(['PROFILE', 'USER', 'PROTO', 'CONNECTION_ID', 'IP', 'DISPLAY_NAME'], rows));
    },
  },
  'connected-users': {
    summary: 'users with a connected device, by profile (--all: with an active configuration)',
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
  profiles: {
    summary: 'the profiles the key may use: id, name, protocols, tunnel, client ranges (an extension)',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const profiles = await client.profiles();
      if (json) {
        out.print(JSON.stringify({ profiles }));
        return;
      }
      out.print(
        formatTable(
          ['PROFILE', 'DISPLAY_NAME', 'PROTOCOLS', 'TUNNEL', 'RANGES'],
          profiles.map((profile) => [
            profile.profile_id,
            profile.display_name,
            profile.vpn_proto_list.join(','),
            profile.default_gateway ? 'full' : 'split',
            profile.ranges
              .map((range) => `node ${range.node_number} ${range.vpn_proto} ${range.range_four} ${range.range_six}`)
              .join('; '),
          ]),
        ),
      );
    },
  },
  create: {
    summary:
      'a new configuration: to stdout, or to FILE (0600, never over an existing file without --force); --qr: a WireGuard file as a QR code for a phone; --public-key/--csr: the device keeps its own key; --device-id, --serial or --mdm-id: for that registered device, replacing its configuration in the profile',
    args: ['USER', 'PROFILE'],
    flags: [
      'format',
      'displayName',
      'expiresIn',
      'preferTcp',
      'output',
      'force',
      'qr',
      'publicKey',
      'csr',
      'platform',
      'onDemand',
      'deviceId',
      'serial',
      'mdmId',
    ],
    run: runCreate,
  },
  extend: {
    summary: 'a later expiry, same key (an extension); OpenVPN: the new certificate, to stdout or FILE',
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
      if (flags.output !== undefined && extended.certificate !== null)
        writeFileSync(flags.output, `${extended.certificate}\n`, { flag: 'w' });
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
    summary:
      'a token a device redeems at {baseUrl}enroll with its own key (an extension); printed once, on the last line',
    args: ['USER', 'PROFILE'],
    flags: ['uses', 'validFor', 'expiresIn', 'displayName'],
    run: async ({ client, args, flags, json, out }) => {
      const [user = '', profile = ''] = args;
      const uses = flags.uses === undefined ? undefined : Number(flags.uses);
      if (uses !== undefined && !(Number.isInteger(uses) && uses >= 1))
        throw new UsageError(`--uses: "${flags.uses}" is not a number of uses (1–1000)`);
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
      out.print(
        `enrollment token ${made.token_id} for ${user} in ${profile}: ${made.uses} use${made.uses === 1 ? '' : 's'}, until ${made.expires_at}`,
      );
      out.print('this is the only time the token is shown (the portal keeps only a hash):');
      out.print(made.enrollment_token);
    },
  },
  'enrollment-tokens': {
    summary: 'the enrollment tokens and their state',
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
    summary: 'redeeming the token answers 410 from now on',
    args: ['USER', 'TOKEN_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const [user = '', tokenId = ''] = args;
      await client.revokeEnrollmentToken(user, tokenId);
      out.print(json ? JSON.stringify({ ok: true }) : `revoked enrollment token ${tokenId} of ${user}`);
    },
  },
  disable: revokingCommand(
    'disable a user: every configuration is taken off the nodes; prints what the revocation receipt says (--wait: until decided)',
    ['USER'],
    ([user = '']) => `disabled ${user}`,
    (client, [user = '']) => client.disableUser(user),
  ),
  enable: userCommand('enabled', 'enable a disabled user again', (client, user) => client.enableUser(user)),
  destroy: revokingCommand(
    'delete a user with every configuration and authorization; prints what the revocation receipt says',
    ['USER'],
    ([user = '']) => `destroyed ${user}`,
    (client, [user = '']) => client.destroy(user),
  ),
  'delete-authorizations': userCommand(
    'deleted the authorizations of',
    "delete a user's OAuth authorizations",
    (client, user) => client.deleteUserAuthorizations(user),
  ),
  // The client form-encodes the id: a public key's `+` and `/` arrive as they are.
  'delete-connection': revokingCommand(
    'delete a configuration (a WireGuard public key or an OpenVPN common name); prints what the revocation receipt says',
    ['USER', 'CONNECTION_ID'],
    ([user = '', connectionId = '']) => `deleted connection ${connectionId} of ${user}`,
    (client, [user = '', connectionId = '']) => client.deleteConnection(user, connectionId),
  ),
  revocation: {
    summary: 'a revocation receipt: per node, whether the removal was confirmed (an extension; --wait: until decided)',
    args: ['REVOCATION_ID'],
    flags: ['wait'],
    run: async ({ client, args, flags, json, out }) => {
      const receipt = flags.wait ? await waitForReceipt(client, args[0] ?? '') : await client.revocation(args[0] ?? '');
      if (json) out.print(JSON.stringify(receipt));
      else {
        out.print(
          `revocation ${receipt.revocation_id} (${receipt.reason} of ${receipt.user_id}, ${receipt.requested_at}): ${describeReceipt(receipt)}`,
        );
        out.print(
          formatTable(
            ['NODE', 'STATE', 'APPLIED', 'CONNECTION_IDS'],
            receipt.nodes.map((node) => [
              String(node.node_number),
              node.state,
              node.applied_at ?? '',
              node.connection_ids.join(','),
            ]),
          ),
        );
      }
      if (flags.wait && receipt.state !== 'applied') throw new RevocationNotApplied();
    },
  },
  revocations: {
    summary: 'revocation receipts, newest first (an extension; --state pending lists pending and overdue ones)',
    args: [],
    flags: ['state', 'user', 'limit'],
    run: async ({ client, flags, json, out }) => {
      const state = stateFlag(param.revocationState.options, flags.state);
      const { limit } = pageFlags(flags);
      const receipts = await client.revocations({
        ...(state === undefined ? {} : { state }),
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(limit === undefined ? {} : { limit }),
      });
      if (json) {
        out.print(JSON.stringify({ revocations: receipts }));
        return;
      }
      out.print(
        formatTable(
          ['REVOCATION_ID', 'USER', 'REASON', 'STATE', 'REQUESTED', 'PENDING_NODES'],
          receipts.map((receipt) => [
            receipt.revocation_id,
            receipt.user_id,
            receipt.reason,
            receipt.state,
            receipt.requested_at,
            pendingNodes(receipt).join(','),
          ]),
        ),
      );
    },
  },
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
    flags: ['at', 'limit', 'cursor'],
    run: async ({ client, args, flags, json, out }) => {
      const ip = args[0] ?? '';
      const page = await client.connectionLog({
        ip,
        ...(flags.at === undefined ? {} : { at: flags.at }),
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
  'webhook create': {
    summary: "subscribe URL to TYPES (comma-separated, or '*'); the signing secret is printed once, on the last line",
    args: ['URL', 'TYPES'],
    flags: ['description'],
    run: async ({ client, args, flags, json, out }) => {
      const [url = '', types = ''] = args;
      const created = await client.createWebhook({
        url,
        event_types: types,
        ...(flags.description === undefined ? {} : { description: flags.description }),
      });
      if (json) {
        out.print(JSON.stringify(created));
        return;
      }
      out.print(
        `created webhook ${created.webhook.webhook_id} for ${created.webhook.event_types.join(',')} to ${created.webhook.url}`,
      );
      out.print('this is the only time the signing secret is shown; store it with the receiver now:');
      out.print(created.secret);
    },
  },
  'admin-key list': {
    summary:
      'the admin keys: scope, profiles, allow-list, expiry, last use and state, never a key (needs a key of scope admin)',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const keys = await client.adminKeys();
      out.print(
        json
          ? JSON.stringify({ admin_keys: keys })
          : formatTable(
              ['NAME', 'SCOPE', 'PROFILES', 'ALLOW', 'CREATED', 'EXPIRES', 'LAST_USED', 'STATE'],
              keys.map((key) => [
                key.name,
                key.scope,
                key.profiles?.join(',') ?? 'all',
                key.allow_list?.join(',') ?? 'any',
                key.created_at,
                key.expires_at ?? 'never',
                key.last_used_at ?? 'never',
                key.state,
              ]),
            ),
      );
    },
  },
  'admin-key create': {
    summary:
      'an admin key with at most the rights of the calling key (--profile and --allow comma-separated); the key is printed once, on the last line',
    args: ['NAME'],
    flags: ['scope', 'profile', 'expiresIn', 'allow'],
    run: async ({ client, args, flags, json, out }) => {
      const created = await client.createAdminKey({
        name: args[0] ?? '',
        ...(flags.scope === undefined ? {} : { scope: scopeOf(flags.scope) }),
        ...(flags.profile === undefined ? {} : { profiles: flags.profile }),
        ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
        ...(flags.allow === undefined ? {} : { allow_list: flags.allow }),
      });
      if (json) {
        out.print(JSON.stringify(created));
        return;
      }
      const key = created.admin_key;
      out.print(
        `created admin key "${key.name}" (id ${key.key_id}): scope ${key.scope}; ${key.profiles === null ? 'every profile' : `profiles ${key.profiles.join(', ')}`}; ${key.expires_at === null ? 'never expires' : `expires ${key.expires_at}`}`,
      );
      out.print('this is the only time the key is shown; store it now:');
      out.print(created.secret);
    },
  },
  'admin-key revoke': {
    summary: 'revoke every key of the name, at once (a key revokes only keys within its own limits)',
    args: ['NAME'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const name = args[0] ?? '';
      const revoked = await client.revokeAdminKey(name);
      out.print(json ? JSON.stringify({ name, revoked }) : `revoked ${revoked} key(s) named "${name}"`);
    },
  },
  'webhook list': {
    summary: 'the webhooks (needs a key of scope admin)',
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
    summary: 'stop sending events to the webhook and delete it',
    args: ['ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      await client.deleteWebhook(args[0] ?? '');
      out.print(json ? JSON.stringify({ ok: true }) : `deleted webhook ${args[0] ?? ''}`);
    },
  },
  'webhook rotate': {
    summary: 'a new secret, printed once; the old one signs too for the overlap (default P1D)',
    args: ['ID'],
    flags: ['overlap'],
    run: async ({ client, args, flags, json, out }) => {
      const rotated = await client.rotateWebhookSecret(args[0] ?? '', flags.overlap);
      if (json) {
        out.print(JSON.stringify(rotated));
        return;
      }
      out.print(
        `new secret for webhook ${rotated.webhook_id}; the old one signs too until ${rotated.previous_secret_until}`,
      );
      out.print('this is the only time it is shown:');
      out.print(rotated.secret);
    },
  },
  'webhook test': {
    summary: 'send a test event to the webhook now; exit code 1 when the receiver did not take it',
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
    summary: 'one device: its identity, state and configurations (an extension)',
    args: ['DEVICE_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const device = await client.device(args[0] ?? '');
      if (json) out.print(JSON.stringify({ device }));
      else printDevice(device, out);
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
  'webhook deliveries': {
    summary: 'the delivery log, newest first, with the last attempt',
    args: [],
    flags: ['webhook', 'eventType', 'state', 'since', 'until', 'limit', 'cursor'],
    run: async ({ client, flags, json, out }) => {
      const paging = pageFlags(flags);
      const state = stateFlag(param.deliveryState.options, flags.state);
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
              last === undefined
                ? ''
                : `${last.outcome}${last.status === null ? '' : ` ${last.status}`}${last.detail === null ? '' : `: ${last.detail}`}`,
            ];
          }),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
};

/** A `--state` flag, checked against the states the call's parameter takes (src/protocol/admin-api-params.ts). */
function stateFlag<T extends string>(states: readonly T[], state: string | undefined): T | undefined {
  if (state === undefined) return undefined;
  if (!(states as readonly string[]).includes(state))
    throw new UsageError(`--state must be ${states.join(', ')}, not "${state}"`);
  return state as T;
}

/** A `--scope` flag, checked against the admin scopes. */
function scopeOf(value: string): AdminScope {
  const scope = ADMIN_SCOPES.find((candidate) => candidate === value);
  if (scope === undefined) throw new UsageError(`--scope: "${value}" is not one of ${ADMIN_SCOPES.join(', ')}`);
  return scope;
}

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
  if (flags.limit !== undefined && !/^[1-9]\d*$/.test(flags.limit))
    throw new UsageError(`--limit: "${flags.limit}" is not a positive number`);
  return {
    ...(flags.since === undefined ? {} : { since: flags.since }),
    ...(flags.until === undefined ? {} : { until: flags.until }),
    ...(flags.limit === undefined ? {} : { limit: Number(flags.limit) }),
    ...(flags.cursor === undefined ? {} : { cursor: flags.cursor }),
  };
}

/** `webhook test` reached the portal, but the receiver did not take the event: exit code 1. */
class TestNotDelivered extends Error {
  override readonly name = 'TestNotDelivered';
}

/** `--wait` ended with the receipt overdue or superseded: exit code 3. */
class RevocationNotApplied extends Error {
  override readonly name = 'RevocationNotApplied';
}

/**
 * disable, destroy, delete-connection: the call, then what its revocation receipt says (at
 * once, or with --wait once it is no longer pending), so "disabled" is never printed for a
 * tunnel a node still passes without saying so.
 */
function revokingCommand(
  summary: string,
  args: readonly string[],
  done: (args: readonly string[]) => string,
  call: (client: AdminApiClient, args: readonly string[]) => Promise<string | null>,
): AdminCommand {
  return {
    summary,
    args,
    flags: ['wait'],
    run: async ({ client, args: given, flags, json, out }) => {
      // delete-connection of a configuration the user does not have: nothing was revoked (null).
      await reportRevocation(client, await call(client, given), flags.wait, json, out, done(given), { ok: true });
    },
  };
}

/** Prints what a revoking call did and its receipt (with `wait`, once decided; not applied then: RevocationNotApplied). */
async function reportRevocation(
  client: AdminApiClient,
  revocationId: string | null,
  wait: boolean,
  json: boolean,
  out: { print(text: string): void },
  done: string,
  answer: Record<string, unknown>,
): Promise<void> {
  if (revocationId === null) {
    out.print(json ? JSON.stringify({ ...answer, revocation: null }) : `${done}: nothing to revoke`);
    return;
  }
  const receipt = wait ? await waitForReceipt(client, revocationId) : await client.revocation(revocationId);
  out.print(
    json
      ? JSON.stringify({ ...answer, revocation: receipt })
      : `${done}: ${describeReceipt(receipt)} (revocation ${revocationId})`,
  );
  if (wait && receipt.state !== 'applied') throw new RevocationNotApplied();
}

async function waitForReceipt(client: AdminApiClient, revocationId: string): Promise<RevocationInfo> {
  for (;;) {
    const receipt = await client.revocation(revocationId);
    if (receipt.state !== 'pending') return receipt;
    await sleep(RECEIPT_POLL_MS);
  }
}

/** A receipt in words: applied on every node, or which nodes are pending. */
function describeReceipt(receipt: RevocationInfo): string {
  const nodes = (state: 'pending' | 'applied') =>
    receipt.nodes.filter((node) => node.state === state).map((node) => node.node_number);
  const list = (numbers: readonly number[]) => `node${numbers.length === 1 ? '' : 's'} ${numbers.join(', ')}`;
  switch (receipt.state) {
    case 'applied':
      return receipt.nodes.length === 0
        ? 'applied (no configuration was on a node)'
        : `applied on every node (${list(nodes('applied'))})`;
    case 'superseded':
      return 'superseded: the user was enabled again before every node confirmed';
    default: {
      const applied = nodes('applied');
      return `${receipt.state}: ${list(nodes('pending'))} did not confirm the removal yet${applied.length === 0 ? '' : `; applied on ${list(applied)}`}`;
    }
  }
}

function pendingNodes(receipt: RevocationInfo): number[] {
  return receipt.nodes.filter((node) => node.state === 'pending').map((node) => node.node_number);
}

function userCommand(
  done: string,
  summary: string,
  call: (client: AdminApiClient, user: string) => Promise<void>,
): AdminCommand {
  return {
    summary,
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
  if (flags.qr && format !== 'wireguard' && format !== 'wireguard-tcp')
    throw new UsageError('--qr needs a WireGuard format (wireguard or wireguard-tcp)');
  const target = flags.output === undefined ? undefined : outputTarget(flags.output);
  // Before the call, so nothing is issued: the old file's configuration keeps running, and its key must not be lost.
  if (flags.output !== undefined && !flags.force && target === 'file') {
    throw new UsageError(
      `${flags.output} exists (its configuration still works, and this would lose its key); pass --force to replace it`,
      'create',
    );
  }
  if (flags.platform !== undefined && !isPlatform(flags.platform)) {
    throw new UsageError(`--platform must be ${describePlatforms()}, not "${flags.platform}"`, 'create');
  }
  if (flags.onDemand !== undefined && flags.onDemand !== 'yes' && flags.onDemand !== 'no') {
    throw new UsageError(`--on-demand must be yes or no, not "${flags.onDemand}"`, 'create');
  }
  const deviceNames = [flags.deviceId, flags.serial, flags.mdmId].filter((value) => value !== undefined);
  if (deviceNames.length > 1)
    throw new UsageError('name the device by one of --device-id, --serial or --mdm-id, not several', 'create');
  const params: CreateParams = {
    user_id: user,
    profile_id: profile,
    ...(flags.displayName === undefined ? {} : { display_name: flags.displayName }),
    ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
    ...(flags.preferTcp ? { prefer_tcp: 'yes' as const } : {}),
    ...(flags.publicKey === undefined ? {} : { public_key: flags.publicKey }),
    ...(flags.csr === undefined ? {} : { csr: readCsr(flags.csr) }),
    ...(flags.platform === undefined ? {} : { platform: flags.platform }),
    ...(flags.onDemand === undefined ? {} : { on_demand: flags.onDemand }),
    ...(flags.deviceId === undefined ? {} : { device_id: flags.deviceId }),
    ...(flags.serial === undefined ? {} : { serial: flags.serial }),
    ...(flags.mdmId === undefined ? {} : { mdm_id: flags.mdmId }),
  };
  const created = await client.create(params, format === undefined ? undefined : FORMATS[format]);
  if (flags.output !== undefined) {
    writeFileSync(flags.output, created.bytes, { mode: 0o600, flag: 'w' });
    // The file holds a private key: only its owner may read it, also when --force replaced an open one.
    // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written into and keeps its mode.
    if (target !== 'special') chmodSync(flags.output, 0o600);
  }
  const connectionId = connectionIdOf(created.body, flags.publicKey);
  // A signed Apple profile is DER: bytes a terminal or a JSON string would mangle.
  const unprintable = flags.output === undefined && created.binary;
  if (json && !unprintable) {
    out.print(JSON.stringify({ ...describeCreated(created, flags.output), connection_id: connectionId }));
    return;
  }
  // On stderr, so stdout stays the file (or the QR code): the id is what delete-connection takes.
  out.printError(
    `issued a new configuration for ${user} in ${profile}: connection id ${connectionId ?? '(not in the file)'}`,
  );
  if (unprintable) {
    throw new UsageError(
      `the answer is binary (${created.contentType}, signed) and was not printed; the configuration exists: give -o FILE next time`,
    );
  }
  if (flags.qr) {
    // The code holds the lines only: the file's final newline would only make it denser.
    out.print(await QRCode.toString(created.body.replace(/\n$/, ''), { type: 'terminal', small: true }));
    return;
  }
  if (flags.output === undefined) out.print(created.body.replace(/\n$/, ''));
  else out.print(`wrote ${flags.output} (${created.contentType}, expires ${created.expiresAt.toISOString()})`);
}

/**
 * The new configuration's connection id, read from its file: the public key of the WireGuard
 * private key (or the device's own key), or the common name of the OpenVPN certificate.
 */
function connectionIdOf(body: string, devicePublicKey: string | undefined): string | null {
  if (devicePublicKey !== undefined) return devicePublicKey;
  const privateKey = /PrivateKey = (\S+)/.exec(body)?.[1];
  if (privateKey !== undefined && isWireGuardKey(privateKey)) return wireGuardPublicKey(privateKey);
  const certificate = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/.exec(
    body.replace(/^[\s\S]*<cert>/, ''),
  )?.[0];
  if (certificate === undefined) return null;
  const escaped = /^CN=(.+)$/m.exec(new X509Certificate(certificate).subject)?.[1];
  // The subject is written as RFC 4514 says: a base64 name's `+` comes as `\+`.
  return escaped === undefined
    ? null
    : escaped.replace(/\\([0-9A-Fa-f]{2}|.)/g, (_, char: string) =>
        char.length === 2 ? String.fromCharCode(Number.parseInt(char, 16)) : char,
      );
}

/**
 * What `-o` names: nothing yet, a file (or a directory, which the write then refuses), or
 * something that is not a file (a character device such as /dev/null, a pipe, a socket):
 * written into as it is, neither a file whose key would be lost nor one to make 0600.
 */
function outputTarget(output: string): 'absent' | 'file' | 'special' {
  const stats = statSync(output, { throwIfNoEntry: false });
  if (stats === undefined) return 'absent';
  return stats.isFile() || stats.isDirectory() ? 'file' : 'special';
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

/**
 * A mistake on the command line; `command` names the admin command whose usage follows it,
 * `usage` is another text to follow it instead.
 */
class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly command?: string,
    readonly usage?: string,
  ) {
    super(message);
  }
}

/** Every flag a command may take: its long option name (for suggestions) and its usage. */
const FLAGS: Readonly<Record<keyof AdminFlags, { readonly option: string; readonly usage: string }>> = {
  all: { option: 'all', usage: '--all' },
  format: { option: 'format', usage: '--format wireguard|wireguard-tcp|openvpn|apple' },
  displayName: { option: 'display-name', usage: '--display-name NAME' },
  expiresIn: { option: 'expires-in', usage: '--expires-in DURATION' },
  preferTcp: { option: 'prefer-tcp', usage: '--prefer-tcp' },
  output: { option: 'output', usage: '-o FILE' },
  force: { option: 'force', usage: '--force' },
  qr: { option: 'qr', usage: '--qr' },
  user: { option: 'user', usage: '--user USER' },
  profile: { option: 'profile', usage: '--profile ID' },
  since: { option: 'since', usage: '--since TIME' },
  at: { option: 'at', usage: '--at TIME' },
  until: { option: 'until', usage: '--until TIME' },
  limit: { option: 'limit', usage: '--limit N' },
  cursor: { option: 'cursor', usage: '--cursor CURSOR' },
  open: { option: 'open', usage: '--open' },
  closed: { option: 'closed', usage: '--closed' },
  keyName: { option: 'key-name', usage: '--key-name NAME' },
  scope: { option: 'scope', usage: '--scope read|write|admin' },
  allow: { option: 'allow', usage: '--allow PREFIX,…' },
  publicKey: { option: 'public-key', usage: '--public-key KEY' },
  csr: { option: 'csr', usage: '--csr FILE' },
  description: { option: 'description', usage: '--description TEXT' },
  overlap: { option: 'overlap', usage: '--overlap DURATION' },
  webhook: { option: 'webhook', usage: '--webhook ID' },
  eventType: { option: 'event-type', usage: '--event-type TYPE' },
  state: { option: 'state', usage: '--state STATE' },
  uses: { option: 'uses', usage: '--uses N' },
  validFor: { option: 'valid-for', usage: '--valid-for DURATION' },
  wait: { option: 'wait', usage: '--wait' },
  platform: { option: 'platform', usage: '--platform PLATFORM' },
  onDemand: { option: 'on-demand', usage: '--on-demand yes|no' },
  deviceId: { option: 'device-id', usage: '--device-id ID' },
  serial: { option: 'serial', usage: '--serial SERIAL' },
  mdmId: { option: 'mdm-id', usage: '--mdm-id ID' },
};

/** The options every admin command takes. */
const COMMON_OPTIONS = ['url', 'key-file', 'config', 'json', 'help'] as const;

/** One command's usage (a handful of lines), for its --help and its mistakes. */
export function adminCommandUsage(name: string): string {
  const command = COMMANDS[name];
  if (command === undefined) return ADMIN_USAGE;
  const words = [
    ...command.args,
    ...command.flags.map((flag) => `[${FLAGS[flag].usage}]`),
    '[--url URL] [--key-file FILE] [--config FILE] [--json]',
  ];
  return [
    ...wrap(`usage: vpn-portal admin ${name}`, words, '         '),
    ...wrap(' ', command.summary.split(' '), '  '),
  ].join('\n');
}

/** After a mistyped command: the commands by name only, and where their usage is (the whole one is long). */
function shortAdminUsage(): string {
  return [
    'usage: vpn-portal admin COMMAND [ARGUMENTS] [--url URL] [--key-file FILE] [--config FILE] [--json]',
    ...wrap(
      '  commands:',
      Object.keys(COMMANDS).map((name, index, all) => (index < all.length - 1 ? `${name},` : name)),
      '    ',
    ),
    "  one command's usage: vpn-portal admin COMMAND --help; every command's: vpn-portal admin --help",
  ].join('\n');
}

/** Words joined into lines of at most 100 characters, the first after `head`, the others after `indent`. */
function wrap(head: string, words: readonly string[], indent: string): string[] {
  const lines: string[] = [];
  let line = head;
  for (const word of words) {
    if (line.length + 1 + word.length > 100 && line.trim() !== '') {
      lines.push(line);
      line = indent + word;
    } else line = `${line} ${word}`;
  }
  return [...lines, line];
}

const ADMIN_OPTIONS = {
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
  force: { type: 'boolean' },
  qr: { type: 'boolean' },
  user: { type: 'string' },
  profile: { type: 'string' },
  since: { type: 'string' },
  at: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  open: { type: 'boolean' },
  closed: { type: 'boolean' },
  'key-name': { type: 'string' },
  scope: { type: 'string' },
  allow: { type: 'string' },
  'public-key': { type: 'string' },
  csr: { type: 'string' },
  description: { type: 'string' },
  overlap: { type: 'string' },
  webhook: { type: 'string' },
  'event-type': { type: 'string' },
  state: { type: 'string' },
  uses: { type: 'string' },
  'valid-for': { type: 'string' },
  wait: { type: 'boolean' },
  platform: { type: 'string' },
  'on-demand': { type: 'string' },
  'device-id': { type: 'string' },
  serial: { type: 'string' },
  'mdm-id': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** `webhook SUBCOMMAND …` (and `device …`, `admin-key …`) is one command of two words; the others are one. */
function commandOf(positionals: readonly string[]): [string | undefined, string[]] {
  const [first, ...rest] = positionals;
  return (first === 'webhook' || first === 'device' || first === 'admin-key') && rest[0] !== undefined
    ? [`${first} ${rest[0]}`, rest.slice(1)]
    : [first, rest];
}

/** The command line read strictly; an unknown option is named with the nearest option of that command. */
function parseAdminArgs(argv: readonly string[]) {
  const config = { args: [...argv], allowPositionals: true, strict: true, options: ADMIN_OPTIONS } as const;
  try {
    return parseArgs(config);
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    const [name] = commandOf(parseArgs({ ...config, strict: false }).positionals);
    const typed = unknownOption(config);
    if (typed === null) throw new UsageError((error as Error).message, name);
    const command = name === undefined ? undefined : COMMANDS[name];
    const candidates =
      command === undefined
        ? Object.keys(ADMIN_OPTIONS)
        : [...command.flags.map((flag) => FLAGS[flag].option), ...COMMON_OPTIONS];
    throw new UsageError(describeUnknownOption(typed, candidates), name);
  }
}

/** Runs `vpn-portal admin ARGS`; returns the exit code. */
export async function runAdminCommand(argv: readonly string[], env: NodeJS.ProcessEnv, out: Output): Promise<number> {
  let json = argv.includes('--json');
  try {
    const { values, positionals } = parseAdminArgs(argv);
    json = values.json === true;
    // `webhook SUBCOMMAND …` is one command of two words.
    const [name, args] = commandOf(positionals);
    if (values.help === true) {
      out.print(name === undefined ? ADMIN_USAGE : adminCommandUsage(name));
      return ADMIN_EXIT.ok;
    }
    if (name === undefined || name === 'help') {
      (name === undefined ? out.printError : out.print)(ADMIN_USAGE);
      return name === undefined ? ADMIN_EXIT.usage : ADMIN_EXIT.ok;
    }
    const command = COMMANDS[name];
    if (command === undefined)
      throw new UsageError(describeUnknownCommand('admin', name, Object.keys(COMMANDS)), undefined, shortAdminUsage());
    if (args.length !== command.args.length) {
      throw new UsageError(
        `admin ${name} takes ${command.args.length === 0 ? 'no arguments' : command.args.join(' ')}`,
        name,
      );
    }
    const flags: AdminFlags = {
      all: values.all === true,
      format: values.format,
      displayName: values['display-name'],
      expiresIn: values['expires-in'],
      preferTcp: values['prefer-tcp'] === true,
      output: values.output,
      force: values.force === true,
      qr: values.qr === true,
      user: values.user,
      profile: values.profile,
      since: values.since,
      at: values.at,
      until: values.until,
      limit: values.limit,
      cursor: values.cursor,
      open: values.open === true,
      closed: values.closed === true,
      keyName: values['key-name'],
      scope: values.scope,
      allow: values.allow,
      publicKey: values['public-key'],
      csr: values.csr,
      description: values.description,
      overlap: values.overlap,
      webhook: values.webhook,
      eventType: values['event-type'],
      state: values.state,
      uses: values.uses,
      validFor: values['valid-for'],
      wait: values.wait === true,
      platform: values.platform,
      onDemand: values['on-demand'],
      deviceId: values['device-id'],
      serial: values.serial,
      mdmId: values['mdm-id'],
    };
    for (const key of Object.keys(FLAGS) as (keyof AdminFlags)[]) {
      const given = flags[key] !== undefined && flags[key] !== false;
      if (given && !command.flags.includes(key))
        throw new UsageError(`admin ${name} does not take ${FLAGS[key].usage.split(' ')[0] ?? ''}`, name);
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
    out.printError(
      json
        ? JSON.stringify({ error: message, ...(status === undefined ? {} : { status }) })
        : `vpn-portal admin: ${message}`,
    );
    return code;
  };
  if (error instanceof AdminApiError) return say(ADMIN_EXIT.refused, `${error.status} ${error.message}`, error.status);
  if (error instanceof TestNotDelivered) return ADMIN_EXIT.refused;
  if (error instanceof RevocationNotApplied) return ADMIN_EXIT.notApplied;
  if (error instanceof UsageError) {
    const usage = error.usage ?? (error.command === undefined ? ADMIN_USAGE : adminCommandUsage(error.command));
    return say(ADMIN_EXIT.usage, json ? error.message : `${error.message}\n${usage}`);
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
