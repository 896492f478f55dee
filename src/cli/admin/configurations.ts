// `vpn-portal admin` commands about configurations and connections: listing them, the profiles,
// issuing a configuration (to a file, stdout or a QR code), renewing one and deleting one.
import { X509Certificate } from 'node:crypto';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CreatedConfiguration } from '../../admin-client/admin-api-client.js';
import { CONFIGURATION_MEDIA_TYPES, type CreateParams } from '../../protocol/admin-api.js';
import { describePlatforms, isPlatform } from '../../shared/platforms.js';
import { isWireGuardKey, wireGuardPublicKey } from '../../wireguard/keys.js';
import { formatTable } from '../table.js';
import { type AdminCommand, deviceFlags, type Invocation, UsageError } from './command.js';
import { revokingCommand } from './revocations.js';

/** `--format` values and the media type each asks `create` for. */
const FORMATS = {
  wireguard: CONFIGURATION_MEDIA_TYPES.wireguard,
  'wireguard-tcp': CONFIGURATION_MEDIA_TYPES['wireguard+tcp'],
  openvpn: CONFIGURATION_MEDIA_TYPES.openvpn,
  apple: CONFIGURATION_MEDIA_TYPES.apple,
} as const;
type FormatName = keyof typeof FORMATS;

/** A user's configurations, the connections, the profiles; issuing and renewing a configuration. */
export const CONFIGURATION_COMMANDS: Readonly<Record<string, AdminCommand>> = {
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
};

/** Deleting one configuration, with what its revocation receipt says. */
export const CONNECTION_DELETE_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  // The client form-encodes the id: a public key's `+` and `/` arrive as they are.
  'delete-connection': revokingCommand(
    'delete a configuration (a WireGuard public key or an OpenVPN common name); prints what the revocation receipt says',
    ['USER', 'CONNECTION_ID'],
    ([user = '', connectionId = '']) => `deleted connection ${connectionId} of ${user}`,
    (client, [user = '', connectionId = '']) => client.deleteConnection(user, connectionId),
  ),
};

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
  const device = deviceFlags(flags, 'create');
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
    ...device,
  };
  const created = await client.create(params, format === undefined ? undefined : FORMATS[format]);
  const connectionId = connectionIdOf(created.body, flags.publicKey);
  if (flags.output !== undefined) {
    try {
      writeFileSync(flags.output, created.bytes, { mode: 0o600, flag: 'w' });
    } catch (error) {
      // Checked before the call, so rare (no permission, a full disk): say what to clean up.
      throw new Error(
        `the configuration was issued (connection id ${connectionId ?? 'unknown'}) but ${flags.output} could not be written (${(error as NodeJS.ErrnoException).code ?? String(error)}); delete it with: vpn-portal admin delete-connection ${user} ${connectionId ?? 'CONNECTION_ID'}`,
      );
    }
    // The file holds a private key: only its owner may read it, also when --force replaced an open one.
    // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written into and keeps its mode.
    if (target !== 'special') chmodSync(flags.output, 0o600);
  }
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
    // Loaded only here: the QR code library is most of what a command would otherwise load.
    const { default: QRCode } = await import('qrcode');
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
/**
 * What -o names, checked before anything is issued: a configuration whose file cannot be
 * written would exist on the portal with its private key lost.
 */
function outputTarget(output: string): 'absent' | 'file' | 'special' {
  const stats = statSync(output, { throwIfNoEntry: false });
  if (stats?.isDirectory() === true) throw new UsageError(`-o ${output} is a folder: name a file in it`, 'create');
  if (stats !== undefined) return stats.isFile() ? 'file' : 'special';
  const folder = path.dirname(path.resolve(output));
  if (statSync(folder, { throwIfNoEntry: false })?.isDirectory() !== true)
    throw new UsageError(`cannot write ${output}: its folder ${folder} does not exist`, 'create');
  return 'absent';
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
