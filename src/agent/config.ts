// The node agent's configuration file (JSON): validated with zod, every mistake named with its
// key, relative paths taken from the file's folder.
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { asNodeNumber, MAX_NODE_NUMBER, type NodeNumber } from '../shared/ids.js';
import { DEFAULT_PORTS_PER_CLIENT, MAX_PORTS_PER_CLIENT, MIN_PORTS_PER_CLIENT } from '../net/deterministic-nat.js';
import { isIpPrefix } from '../net/ip-prefix.js';
import { DEFAULT_MAX_PENDING_REQUESTS, DEFAULT_REQUEST_TIMEOUT_MS } from './proxyguard/relay.js';

export type WireGuardImplementation = 'auto' | 'kernel' | 'wireguard-go';

export interface NodeAgentConfig {
  /** Base URL of the portal's Node API. */
  readonly apiUrl: URL;
  readonly nodeNumber: NodeNumber;
  /** Absolute path of the node key file (relative paths are taken from the config file's folder). */
  readonly nodeKeyFile: string;
  /** Where the vpn-daemon protocol is served; port 0 picks a free port. */
  readonly listen: { readonly host: string; readonly port: number };
  readonly wireGuard: {
    readonly interfaceName: string;
    readonly implementation: WireGuardImplementation;
    /** Where recently connected devices' endpoints are kept across restarts (endpoint-memory.ts). */
    readonly endpointFile: string;
    /** Where the removals of the last ten minutes are kept across restarts (removal-file.ts). */
    readonly removalFile: string;
  };
  /** The ProxyGuard relay (WireGuard over TCP); it runs only while the portal enables the proxy. */
  readonly proxyGuard: ProxyGuardSettings;
  /** Where and how the OpenVPN server processes the portal assigns to this node run. */
  readonly openVpn: OpenVpnSettings;
  /** Profiles this node serves; empty means all. */
  readonly profileIdList: readonly string[];
  /** Forward the node's client ranges and translate their IPv4 traffic (full tunnel); null: neither. See nat.ts. */
  readonly nat: NatSetting | null;
  /** Where /metrics, /healthz and /readyz are served; null: not served. */
  readonly metrics: { readonly host: string; readonly port: number } | null;
  /** How often the server configuration is fetched again from the portal. */
  readonly refreshIntervalMs: number;
  /** Reported in `/i/node`: the portal then puts no new configuration on this node. */
  readonly maintenanceMode: boolean;
  readonly logLevel: LogLevel;
}

export interface ProxyGuardSettings {
  /** Plain HTTP, meant for the site's TLS reverse proxy; loopback unless that runs elsewhere. */
  readonly listen: { readonly host: string; readonly port: number };
  /** Concurrent tunnels; one more is answered 503. */
  readonly maxTunnels: number;
  /** A tunnel without both a byte from its client and a datagram from WireGuard for this long is closed. */
  readonly idleTimeoutMs: number;
  /** Connections still sending their upgrade request, on top of the tunnels; one more takes the oldest one's place. */
  readonly maxPendingRequests: number;
  /** A connection must have sent its whole upgrade request within this time. */
  readonly requestTimeoutMs: number;
  /** Reverse proxies (CIDR) whose X-Forwarded-For names a tunnel's client; empty: believed from nobody. */
  readonly trustedProxyList: readonly string[];
}

/** `"nat": true` masquerades; an object maps each client to a fixed public address and port block. */
export type NatSetting =
  | { readonly mode: 'masquerade' }
  | {
      readonly mode: 'deterministic';
      readonly publicAddresses: readonly string[];
      readonly portsPerClient: number;
    };

export type PreferAesSetting = 'auto' | 'yes' | 'no';

export interface OpenVpnSettings {
  /** Absolute folder of the server configuration files (0700; the files hold private keys). */
  readonly configDir: string;
  /** Absolute folder of the management sockets (0700: whoever reaches a socket controls the server). */
  readonly managementDir: string;
  /** Account OpenVPN switches to after start-up (sent to the portal, which writes `user`/`group`). */
  readonly user: string;
  readonly group: string;
  /** `auto`: yes when the CPU has AES instructions. */
  readonly preferAes: PreferAesSetting;
  /** The `openvpn` program: a name looked up in PATH, or a path (relative ones from the config file's folder). */
  readonly binary: string;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

export const DEFAULT_API_URL = 'http://127.0.0.1:8080/vpn-user-portal/node-api.php';
export const DEFAULT_DAEMON_PORT = 41194;
/** Next to WireGuard's own 51820, on TCP. */
export const DEFAULT_PROXYGUARD_PORT = 51821;

// Linux interface names: at most 15 bytes; the character set wg-quick accepts.
const INTERFACE_NAME_PATTERN = /^[a-zA-Z0-9_=+.-]{1,15}$/;
const PROFILE_ID_PATTERN = /^[a-zA-Z0-9-.]+$/;
/** What the portal accepts for `vpn_user` and `vpn_group`. */
const ACCOUNT_PATTERN = /^[_a-zA-Z0-9]+$/;
/** What the portal accepts for `management_dir` (checked again once relative paths are resolved). */
const MANAGEMENT_DIR_PATTERN = /^\/[A-Za-z0-9._/-]+$/;
export const DEFAULT_OPENVPN_CONFIG_DIR = '/var/lib/vpn-portal-node/openvpn';
export const DEFAULT_OPENVPN_MANAGEMENT_DIR = '/run/vpn-portal-node/openvpn';
/** Next to the portal's 9466, so both fit on one host. */
export const DEFAULT_METRICS_LISTEN = '127.0.0.1:9467';
export const DEFAULT_ENDPOINT_FILE = '/var/lib/vpn-portal-node/wireguard-endpoints.json';

/** The file's schema; every option's meaning is written here once: docs/configuration.md is generated from it (npm run docs). */
export const nodeAgentConfigSchema = z.strictObject({
  apiUrl: z
    .url({ protocol: /^https?$/ })
    .default(DEFAULT_API_URL)
    .describe("The portal's Node API."),
  nodeNumber: z
    .number()
    .int()
    .min(0)
    .max(MAX_NODE_NUMBER)
    .default(0)
    .describe("This node's number (the portal's `onNode` values)."),
  nodeKeyFile: z
    .string()
    .min(1)
    .describe(
      "The node secret: the same 64 hex characters as the portal's `DATA/keys/node.N.key`. A relative path is taken from the file's folder.",
    ),
  listen: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1').describe('Where the vpn-daemon protocol is served.'),
      port: z
        .number()
        .int()
        .min(0)
        .max(65535)
        .default(DEFAULT_DAEMON_PORT)
        .describe('The port of `listen.host` (0: any free port).'),
    })
    .prefault({}),
  WireGuard: z
    .strictObject({
      interfaceName: z
        .string()
        .regex(INTERFACE_NAME_PATTERN, 'must be 1 to 15 characters of a-z A-Z 0-9 _ = + . -')
        .default('wg0')
        .describe('The WireGuard interface (at most 15 characters).'),
      implementation: z
        .enum(['auto', 'kernel', 'wireguard-go'])
        .default('auto')
        .describe('`auto`: kernel WireGuard when the kernel has it, else wireguard-go.'),
      endpointFile: z.string().min(1).default(DEFAULT_ENDPOINT_FILE).meta({
        description:
          "Where the endpoints of recently online devices are kept across restarts (0600 file, 0700 folder), so a restarted node greets them at once. The agent's wireguard-go is noted beside it (`wireguard-go.<interface>.pid`), so an agent started after one killed with SIGKILL ends it.",
        see: 'nodes.md#revocation-is-final',
      }),
      removalFile: z.string().min(1).optional().meta({
        description:
          "Where the peers removed in the last ten minutes are kept, with their revisions, across restarts (0600 file, 0700 folder), so that an add sent before a removal is refused by a restarted agent too. Default: `wireguard-removals.jsonl` in `endpointFile`'s folder.",
        see: 'nodes.md#revocation-is-final',
      }),
    })
    .prefault({}),
  ProxyGuard: z
    .strictObject({
      listen: z
        .strictObject({
          host: z.string().min(1).default('127.0.0.1').meta({
            description:
              "Where the ProxyGuard relay listens: plain HTTP for the site's TLS reverse proxy, so loopback unless that proxy runs on another host. The relay runs only while the portal has `WireGuard.enableProxy`.",
            see: 'wireguard-over-tcp.md',
          }),
          port: z
            .number()
            .int()
            .min(0)
            .max(65535)
            .default(DEFAULT_PROXYGUARD_PORT)
            .describe('The port of `ProxyGuard.listen.host`.'),
        })
        .prefault({}),
      maxTunnels: z
        .number()
        .int()
        .min(1)
        .max(100_000)
        .default(1000)
        .describe(
          'Concurrent WireGuard-over-TCP tunnels; one more takes the place of the oldest tunnel WireGuard has not answered yet, and is answered 503 when WireGuard answered them all.',
        ),
      // Longer than WireGuard's 120 s rekey and 25 s keep-alive, so only a gone device times out.
      idleTimeoutSeconds: z
        .number()
        .int()
        .min(1)
        .max(86_400)
        .default(600)
        .describe(
          "A tunnel without both a byte from its client and a datagram from WireGuard for this long is closed (above WireGuard's 25 s keep-alive and 120 s rekey, so only a gone device hits it).",
        ),
      // Small: real clients send their request at once and leave their slot within milliseconds.
      maxPendingRequests: z
        .number()
        .int()
        .min(1)
        .max(10_000)
        .default(DEFAULT_MAX_PENDING_REQUESTS)
        .describe(
          "Connections still sending their upgrade request, on top of the tunnels; one more takes the oldest one's place, which is closed.",
        ),
      requestTimeoutSeconds: z
        .number()
        .int()
        .min(1)
        .max(60)
        .default(DEFAULT_REQUEST_TIMEOUT_MS / 1000)
        .describe('A connection that has not sent its whole upgrade request within this time is closed.'),
      trustedProxyList: z
        .array(z.string().refine(isIpPrefix, 'must be an IP prefix such as 127.0.0.1/32').meta({ format: 'ip-prefix' }))
        .default([])
        .meta({
          description:
            "Reverse proxies (CIDR) in front of the relay whose `X-Forwarded-For` names a tunnel's client (the right-most entry that is not one of them), so sessions, RADIUS and webhooks carry the device's address, not the proxy's; from anyone else the header is ignored. Empty: the TCP peer is the client.",
          see: 'wireguard-over-tcp.md#behind-a-reverse-proxy',
        }),
    })
    .prefault({}),
  OpenVPN: z
    .strictObject({
      configDir: z
        .string()
        .min(1)
        .default(DEFAULT_OPENVPN_CONFIG_DIR)
        .describe('Where the OpenVPN server files go (0700 folder, 0600 files: they hold the server key).'),
      managementDir: z
        .string()
        .min(1)
        .default(DEFAULT_OPENVPN_MANAGEMENT_DIR)
        .describe(
          "The processes' management sockets and their pid records (`<name>.pid`, by which an agent started after one killed with SIGKILL ends the servers it left running); the folder is kept 0700, since whoever reaches a socket could admit clients.",
        ),
      user: z
        .string()
        .regex(ACCOUNT_PATTERN, 'must be letters, digits or _')
        .default('nobody')
        .describe('The account the `openvpn` processes drop to after start.'),
      group: z
        .string()
        .regex(ACCOUNT_PATTERN, 'must be letters, digits or _')
        .default('nogroup')
        .describe('The group the `openvpn` processes drop to after start.'),
      preferAes: z
        .enum(['auto', 'yes', 'no'])
        .default('auto')
        .describe(
          'AES-256-GCM (`yes`) or CHACHA20-POLY1305 (`no`) first in `data-ciphers`; `auto`: yes when `/proc/cpuinfo` lists `aes`.',
        ),
      binary: z
        .string()
        .min(1)
        .default('openvpn')
        .describe(
          "The OpenVPN 2.6 program (a bare name is looked up in PATH, a relative path from the file's folder).",
        ),
    })
    .prefault({}),
  profileIdList: z
    .array(z.string().regex(PROFILE_ID_PATTERN, 'must match ^[a-zA-Z0-9-.]+$'))
    .default([])
    .describe('The profiles this node serves; empty: all that name it.'),
  nat: z
    .union([
      z.boolean(),
      z.strictObject({
        publicAddresses: z
          .array(z.ipv4({ error: 'must be an IPv4 address' }))
          .min(1)
          .max(65_536)
          .describe(
            "The node's public IPv4 addresses its clients leave through (each must reach the node: routed to it or on its interface).",
          ),
        portsPerClient: z
          .number()
          .int()
          .min(MIN_PORTS_PER_CLIENT)
          .max(MAX_PORTS_PER_CLIENT)
          .default(DEFAULT_PORTS_PER_CLIENT)
          .describe(
            `Source ports of each client's block (${MIN_PORTS_PER_CLIENT}–${MAX_PORTS_PER_CLIENT}); ⌊64,512 ÷ portsPerClient⌋ clients share one public address.`,
          ),
      }),
    ])
    .default(false)
    .meta({
      description:
        "Forward this node's client ranges to the Internet: `true` masquerades them behind the node's address; `{ publicAddresses, portsPerClient }` is deterministic NAT, each client IPv4 address on a fixed public address and port block, so an abuse report's address and port name the client (IPv6 is then routed, not translated); `false`: neither.",
      see: 'node-agent.md#full-tunnel-forwarding-and-nat',
    }),
  metrics: z
    .strictObject({
      listen: z
        .string()
        .regex(/^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/, 'must be HOST:PORT, e.g. 127.0.0.1:9467 or [::1]:9467')
        .refine((text) => Number(text.slice(text.lastIndexOf(':') + 1)) <= 65535, 'the port must be at most 65535')
        .nullable()
        .default(DEFAULT_METRICS_LISTEN)
        .meta({
          description: "`HOST:PORT` of the agent's `/metrics`, `/healthz`, `/readyz`; `null`: not served.",
          see: 'operations.md#metrics-and-health',
        }),
    })
    .prefault({}),
  refreshIntervalSeconds: z
    .number()
    .int()
    .min(1)
    .max(86_400)
    .default(60)
    .describe("How often the portal's settings are fetched again."),
  maintenanceMode: z.boolean().default(false).meta({
    description:
      'The portal puts no new configuration on this node; its peers and clients stay. Re-read on SIGHUP (`systemctl reload` with `ExecReload=kill -HUP $MAINPID`): drain a node without a restart.',
    see: 'nodes.md#maintenance-and-capacity',
  }),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info').describe('The pino level.'),
});

export class NodeAgentConfigError extends Error {
  constructor(file: string, problems: readonly string[]) {
    super(`invalid node configuration ${file}: ${problems.join('; ')}`);
    this.name = 'NodeAgentConfigError';
  }
}

export async function loadNodeAgentConfig(configPath: string): Promise<NodeAgentConfig> {
  const file = resolve(configPath);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new NodeAgentConfigError(file, [
      `cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    ]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new NodeAgentConfigError(file, [`not valid JSON: ${(error as Error).message}`]);
  }
  return parseNodeAgentConfig(json, file);
}

/** Validates parsed JSON; `file` names the source in errors and anchors relative paths. */
export function parseNodeAgentConfig(json: unknown, file: string): NodeAgentConfig {
  const parsed = nodeAgentConfigSchema.safeParse(json);
  if (!parsed.success)
    throw new NodeAgentConfigError(
      file,
      parsed.error.issues.map((issue) => describeIssue(issue, json)),
    );
  const config = parsed.data;
  const base = dirname(file);
  const managementDir = resolve(base, config.OpenVPN.managementDir);
  if (!MANAGEMENT_DIR_PATTERN.test(managementDir)) {
    throw new NodeAgentConfigError(file, [
      `"OpenVPN.managementDir": ${managementDir} may only contain A-Z a-z 0-9 . _ / -`,
    ]);
  }
  return {
    apiUrl: new URL(config.apiUrl),
    nodeNumber: asNodeNumber(config.nodeNumber),
    nodeKeyFile: resolve(base, config.nodeKeyFile),
    listen: config.listen,
    wireGuard: wireGuardFiles(base, config.WireGuard),
    proxyGuard: {
      listen: config.ProxyGuard.listen,
      maxTunnels: config.ProxyGuard.maxTunnels,
      idleTimeoutMs: config.ProxyGuard.idleTimeoutSeconds * 1000,
      maxPendingRequests: config.ProxyGuard.maxPendingRequests,
      requestTimeoutMs: config.ProxyGuard.requestTimeoutSeconds * 1000,
      trustedProxyList: config.ProxyGuard.trustedProxyList,
    },
    openVpn: {
      configDir: resolve(base, config.OpenVPN.configDir),
      managementDir,
      user: config.OpenVPN.user,
      group: config.OpenVPN.group,
      preferAes: config.OpenVPN.preferAes,
      // A bare name is looked up in PATH; anything with a slash is a path.
      binary: config.OpenVPN.binary.includes('/') ? resolve(base, config.OpenVPN.binary) : config.OpenVPN.binary,
    },
    profileIdList: config.profileIdList,
    nat: natSettingOf(config.nat),
    metrics: config.metrics.listen === null ? null : splitListen(config.metrics.listen),
    refreshIntervalMs: config.refreshIntervalSeconds * 1000,
    maintenanceMode: config.maintenanceMode,
    logLevel: config.logLevel,
  };
}

function natSettingOf(nat: z.infer<typeof nodeAgentConfigSchema>['nat']): NatSetting | null {
  if (nat === false) return null;
  if (nat === true) return { mode: 'masquerade' };
  return { mode: 'deterministic', publicAddresses: nat.publicAddresses, portsPerClient: nat.portsPerClient };
}

function splitListen(text: string): { host: string; port: number } {
  const split = text.lastIndexOf(':');
  return { host: text.slice(0, split).replace(/^\[(.*)\]$/, '$1'), port: Number(text.slice(split + 1)) };
}

function describeIssue(issue: z.core.$ZodIssue, json: unknown): string {
  const where = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => `unknown key "${where === '' ? key : `${where}.${key}`}"`).join('; ');
  }
  if (issue.code === 'invalid_type' && valueAt(json, issue.path) === undefined) return `missing key "${where}"`;
  return `"${where}": ${issue.message}`;
}

function valueAt(json: unknown, path: readonly PropertyKey[]): unknown {
  let value = json;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** The WireGuard part with its files resolved against the configuration file's folder. */
function wireGuardFiles(
  base: string,
  wireGuard: z.infer<typeof nodeAgentConfigSchema>['WireGuard'],
): NodeAgentConfig['wireGuard'] {
  const endpointFile = resolve(base, wireGuard.endpointFile);
  return {
    interfaceName: wireGuard.interfaceName,
    implementation: wireGuard.implementation,
    endpointFile,
    removalFile:
      wireGuard.removalFile === undefined
        ? join(dirname(endpointFile), 'wireguard-removals.jsonl')
        : resolve(base, wireGuard.removalFile),
  };
}
