import { z } from 'zod';
import { parseCidr, type Cidr } from './cidr.js';
import { Secret } from './secret.js';
import { isWireGuardKey } from '../../wireguard/keys.js';

/** The WireGuard part of the portal's `server_config` answer for this node. */
export interface WireGuardServerConfig {
  readonly privateKey: Secret;
  readonly listenPort: number;
  /** Null: leave the interface's MTU at the WireGuard default. */
  readonly mtu: number | null;
  /** Interface addresses: the gateway address of every WireGuard profile range on this node. */
  readonly addressList: readonly Cidr[];
  /** Null unless the portal offers WireGuard over TCP: then this node runs the ProxyGuard relay. */
  readonly proxyGuard: ProxyGuardAssignment | null;
}

export interface ProxyGuardAssignment {
  /** This node's host names in the portal's profiles: the last path segment a relay request may name. */
  readonly hostNames: readonly string[];
}

export interface NodeServerConfig {
  /** Null when no WireGuard profile runs on this node. */
  readonly wireguard: WireGuardServerConfig | null;
}

const cidrSchema = z.string().transform((text, context): Cidr => {
  const cidr = parseCidr(text);
  if (cidr === null) {
    context.addIssue({ code: 'custom', message: 'must be an IP address with prefix length' });
    return z.NEVER;
  }
  return cidr;
});

const wireGuardSchema = z.object({
  privateKey: z.string().refine(isWireGuardKey, 'must be a Base64 WireGuard key'),
  listenPort: z.number().int().min(1).max(65535),
  mtu: z.number().int().min(576).max(65535).nullable().optional(),
  addressList: z.array(cidrSchema).min(1),
  // Absent from portals without WireGuard over TCP: the same as null.
  proxyGuard: z.object({ hostNames: z.array(z.string().min(1)) }).nullable().optional(),
});

// Plain (non-strict) objects: keys added by newer portals, such as "openvpn", are ignored.
const serverConfigSchema = z.object({ wireguard: wireGuardSchema.nullable() });

export class ServerConfigFormatError extends Error {
  constructor(reason: string) {
    super(`the portal's server_config answer is not usable: ${reason}`);
    this.name = 'ServerConfigFormatError';
  }
}

export function parseServerConfig(json: unknown): NodeServerConfig {
  const parsed = serverConfigSchema.safeParse(json);
  if (!parsed.success) {
    // Issue paths and messages only: the received values include the private key.
    const reason = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
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
            addressList: wireguard.addressList,
            proxyGuard: wireguard.proxyGuard == null ? null : { hostNames: wireguard.proxyGuard.hostNames },
          },
  };
}
