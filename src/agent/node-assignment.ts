// Reads the portal's `server_config` answer strictly: a malformed answer is refused as a whole
// (never half applied), and private keys and server files are kept as Secrets.
import { z } from 'zod';
import { parseCidr, type Cidr } from '../net/cidr.js';
import {
  openVpnServerFileListSchema,
  serverConfigAnswerSchema,
  type openVpnServerFileSchema,
} from '../protocol/node-api.js';
import { Secret } from '../shared/secret.js';

/** The WireGuard part of the portal's `server_config` answer for this node. */
export interface WireGuardAssignment {
  readonly privateKey: Secret;
  readonly listenPort: number;
  /** Null: leave the interface's MTU at the WireGuard default. */
  readonly mtu: number | null;
  /** Interface addresses: the gateway address of every WireGuard profile range on this node. */
  readonly addressList: readonly Cidr[];
  /** Null unless the portal offers WireGuard over TCP: then this node runs the ProxyGuard relay. */
  readonly proxyGuard: ProxyGuardAssignment | null;
  /** Clients each profile's range on this node can hold (empty from portals that do not say). */
  readonly capacity: readonly { readonly profileId: string; readonly peers: number }[];
}

export interface ProxyGuardAssignment {
  /** This node's host names in the portal's profiles: the last path segment a relay request may name. */
  readonly hostNames: readonly string[];
}

export interface NodeServerConfig {
  /** Null when no WireGuard profile runs on this node. */
  readonly wireguard: WireGuardAssignment | null;
  /**
   * One entry per OpenVPN server process of this node. Absent when the portal sent no list
   * (portals without OpenVPN): the same as an empty one.
   */
  readonly openvpn?: readonly OpenVpnServerFile[];
}

/** One OpenVPN server process as the protocol describes it, the file text kept as a Secret (it holds the server's private key). */
export type OpenVpnServerFile = Omit<z.output<typeof openVpnServerFileSchema>, 'content'> & {
  readonly content: Secret;
};

// Plain (non-strict) objects: keys added by newer portals are ignored. "openvpn" is read only
// when it is a list, the format this agent knows; anything else there (portals without
// OpenVPN send nothing) counts as no OpenVPN server.
const serverConfigSchema = serverConfigAnswerSchema.extend({
  openvpn: z
    .unknown()
    .optional()
    .transform((value, context) => {
      if (!Array.isArray(value)) return undefined;
      const parsed = openVpnServerFileListSchema.safeParse(value);
      if (parsed.success) return parsed.data;
      for (const issue of parsed.error.issues)
        context.addIssue({ code: 'custom', message: issue.message, path: issue.path });
      return z.NEVER;
    }),
});

export class ServerConfigFormatError extends Error {
  constructor(reason: string) {
    super(`the portal's server_config answer is not usable: ${reason}`);
    this.name = 'ServerConfigFormatError';
  }
}

export function parseServerConfig(json: unknown): NodeServerConfig {
  const parsed = serverConfigSchema.safeParse(json);
  if (!parsed.success) {
    // Issue paths and messages only: the received values include private keys.
    const reason = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new ServerConfigFormatError(reason);
  }
  const wireguard = parsed.data.wireguard;
  return {
    wireguard:
      wireguard === null
        ? null
        : {
            privateKey: new Secret(wireguard.privateKey),
            listenPort: wireguard.listenPort,
            mtu: wireguard.mtu ?? null,
            addressList: wireguard.addressList.map(toCidr),
            proxyGuard: wireguard.proxyGuard == null ? null : { hostNames: wireguard.proxyGuard.hostNames },
            capacity: wireguard.capacity ?? [],
          },
    ...(parsed.data.openvpn === undefined
      ? {}
      : {
          openvpn: parsed.data.openvpn.map((file) => ({
            name: file.name,
            profileId: file.profileId,
            processNumber: file.processNumber,
            proto: file.proto,
            port: file.port,
            content: new Secret(file.content),
          })),
        }),
  };
}

/** The schema checked the text already. */
function toCidr(text: string): Cidr {
  const cidr = parseCidr(text);
  if (cidr === null) throw new ServerConfigFormatError(`"${text}" is not an address with prefix length`);
  return cidr;
}
