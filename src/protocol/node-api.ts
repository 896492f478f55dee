// The Node API, node → portal (reference §1.2): a node agent fetches its server configuration,
// asks whether an OpenVPN client may connect, and reports that one disconnected. Described
// once for both ends: paths, the form bodies the agent sends, and what the portal answers.
// Every call carries `X-Node-Number` and the node secret as a Bearer token.
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';
import { parseCidr } from '../net/cidr.js';
import { isWireGuardKey } from '../wireguard/keys.js';

export const NODE_API_PATHS = {
  serverConfig: '/server_config',
  connect: '/connect',
  disconnect: '/disconnect',
} as const;

export const NODE_NUMBER_HEADER = 'X-Node-Number';

const PROFILE_ID = /^[a-zA-Z0-9-.]+$/;
const profileId = z.string().regex(PROFILE_ID, 'must match ^[a-zA-Z0-9-.]+$');
/**
 * An IPv4 or IPv6 address without a zone (`fe80::1%eth0`), as PHP's FILTER_VALIDATE_IP takes it:
 * Node's isIP takes a zone of any length, which PostgreSQL's column of 64 characters refused (a 500).
 */
const ipAddress = z.string().refine((value) => isIP(value) !== 0 && !value.includes('%'), 'must be an IP address');
const yesNo = z.enum(['yes', 'no']);
/** A certificate Common Name made by the portal: Base64 of 32 bytes. */
const commonName = z.string().refine(isWireGuardKey, 'must be Base64 of 32 bytes');
/** A client's tunnel addresses: plain addresses of their family, without a zone. */
const ipFourAddress = z.string().refine(isIPv4, 'must be an IPv4 address');
const ipSixAddress = z.string().refine((value) => isIPv6(value) && !value.includes('%'), 'must be an IPv6 address');
/** A non-negative safe integer in decimal (`what` it counts, for the message): what both databases store exactly. */
const decimalCount = (what: string) =>
  z
    .string()
    .regex(/^\d{1,16}$/, `must be ${what}`)
    .refine((value) => Number.isSafeInteger(Number(value)), 'must be at most 2^53 - 1');
const byteCount = decimalCount('a byte count');

// ---- server_config ----

/** The form of `POST /server_config`: what the portal needs to render this node's OpenVPN files. */
export const serverConfigForm = z.object({
  /** Profiles this node serves (repeated); absent: every profile that names the node. */
  profile_id_list: z.union([profileId, z.array(profileId)]).optional(),
  /** Unix user and group the OpenVPN processes drop to. */
  vpn_user: z
    .string()
    .regex(/^[_a-zA-Z0-9]+$/)
    .optional(),
  vpn_group: z
    .string()
    .regex(/^[_a-zA-Z0-9]+$/)
    .optional(),
  /** AES-256-GCM first in `data-ciphers` (the node's CPU has AES instructions). */
  prefer_aes: yesNo.optional(),
  /** Absolute folder of the management sockets; written into server files, so no special characters. */
  management_dir: z
    .string()
    .regex(/^\/[A-Za-z0-9._/-]{0,200}$/)
    .refine((value) => !value.split('/').includes('..'), 'must not contain ..')
    .optional(),
});
export type ServerConfigForm = z.input<typeof serverConfigForm>;

const cidrText = z.string().refine((text) => parseCidr(text) !== null, 'must be an IP address with prefix length');

export const wireGuardServerConfigSchema = z.object({
  privateKey: z.string().refine(isWireGuardKey, 'must be a Base64 WireGuard key'),
  listenPort: z.number().int().min(1).max(65535),
  /** Null: the WireGuard default. */
  mtu: z.number().int().min(576).max(65535).nullable().optional(),
  /** The gateway address of every WireGuard profile range on this node, IPv4 first. */
  addressList: z.array(cidrText).min(1),
  /** Ours: clients each profile's range on this node can hold, so a node running wireguard-go (at most 65,536 peers) can refuse more. */
  capacity: z.array(z.object({ profileId: profileId, peers: z.number().int().nonnegative() })).optional(),
  /** Null unless WireGuard over TCP is enabled: the node's host names its ProxyGuard relay answers for. Absent from older portals. */
  proxyGuard: z
    .object({ hostNames: z.array(z.string().min(1)) })
    .nullable()
    .optional(),
});

const OPENVPN_FILE_NAME = /^[a-zA-Z0-9-.]+-\d+\.conf$/;
/** The files are written as they are; a sanity bound, far above any real configuration. */
const MAX_OPENVPN_FILE_BYTES = 1024 * 1024;

/** One OpenVPN server process: the portal renders its whole configuration file. */
export const openVpnServerFileSchema = z
  .object({
    /** `<profileId>-<processNumber>.conf`: the file name, and the socket name with `.sock`. */
    name: z.string().regex(OPENVPN_FILE_NAME, 'must be <profileId>-<number>.conf'),
    profileId,
    processNumber: z.number().int().min(0).max(1023),
    proto: z.enum(['udp', 'tcp']),
    port: z.number().int().min(1).max(65535),
    content: z.string().min(1).max(MAX_OPENVPN_FILE_BYTES),
  })
  .refine((file) => file.name === `${file.profileId}-${file.processNumber}.conf`, {
    message: 'name must be <profileId>-<processNumber>.conf of the same entry',
    path: ['name'],
  });

export const openVpnServerFileListSchema = z
  .array(openVpnServerFileSchema)
  .refine((files) => new Set(files.map((file) => file.name)).size === files.length, 'file names must be unique');

/** The answer of `POST /server_config` (JSON). */
export const serverConfigAnswerSchema = z.object({
  /** Null when no WireGuard profile runs on the node. */
  wireguard: wireGuardServerConfigSchema.nullable(),
  /** One entry per OpenVPN server process; portals without OpenVPN send none. */
  openvpn: openVpnServerFileListSchema.optional(),
});
export type ServerConfigAnswer = z.input<typeof serverConfigAnswerSchema>;

// ---- connect, disconnect ----

/** The form of `POST /connect`; the answer is the text `OK` (allowed) or `ERR`. */
export const connectForm = z.object({
  /** The profile of the OpenVPN process the client reached. */
  profile_id: profileId,
  common_name: commonName,
  /** The client's public address; left out when OpenVPN did not tell. */
  originating_ip: ipAddress.optional(),
  /** The client's tunnel addresses, within the profile's OpenVPN ranges on this node. */
  ip_four: ipFourAddress,
  /** Left out when the process has no IPv6 pool. */
  ip_six: ipSixAddress.optional(),
  /** `yes` at a TLS renegotiation of a connected client: decided again, but no new connection. */
  reauth: yesNo.optional(),
});
export type ConnectForm = z.input<typeof connectForm>;

/** The form of `POST /disconnect`; the answer is the text `OK`. */
export const disconnectForm = z.object({
  common_name: commonName,
  /** Bytes the server received from the client. */
  bytes_in: byteCount,
  /** Bytes the server sent to the client. */
  bytes_out: byteCount,
  profile_id: profileId.optional(),
  /** As at connect; within the ranges of `profile_id` on this node when it is given. */
  ip_four: ipFourAddress.optional(),
  ip_six: ipSixAddress.optional(),
  /**
   * How long before this report the portal admitted the connection, in milliseconds of the
   * node's own (monotonic) clock, measured anew for each attempt: the portal ends only a session
   * that began by then, so a report repeated after the client reconnected ends nothing newer.
   * Left out by older agents (the portal then ends the oldest open session of the address).
   */
  age_ms: decimalCount('a number of milliseconds').optional(),
});
export type DisconnectForm = z.input<typeof disconnectForm>;

export const CONNECT_ALLOWED = 'OK';
export const CONNECT_REFUSED = 'ERR';
