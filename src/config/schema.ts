// The portal's configuration file: one JSON document. Option names follow the eduVPN
// server (reference §2) so an eduVPN administrator recognises them; the portal's own
// options (baseUrl, listen, dataDir, database, databaseTimeout, databasePoolSize, adminApi, nodeApi, enrollment,
// webhooks, apple, reconcileInterval, logLevel, auditLogRetention) are
// documented in the README. Unknown keys are rejected so a typo never goes unnoticed.
import { z } from 'zod';
import { DATABASE_PATTERN } from './database-location.js';
import { addDuration, parseIsoDuration } from '../shared/iso-duration.js';

const PROFILE_ID = /^[a-zA-Z0-9-.]+$/;

const cidr = z.string().min(1);
const port = z.int().min(1).max(65535);
const isoDuration = z
  .string()
  .refine((text) => parseIsoDuration(text) !== null, { message: 'not an ISO 8601 duration such as P90D or PT12H' })
  .refine(endsBeforeYear10000, { message: 'too long: an expiry after the year 9999 cannot be written as a date' });

function endsBeforeYear10000(text: string): boolean {
  const duration = parseIsoDuration(text);
  if (duration === null) return true; // reported by the refinement above
  const end = addDuration(new Date(), duration);
  return Number.isFinite(end.getTime()) && end.getUTCFullYear() <= 9999;
}
/** A per-node option: one value for every node, or one value per entry of `onNode`. */
const perNode = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1)]);

export const profileSchema = z.strictObject({
  profileId: z.string().regex(PROFILE_ID, 'must match ^[a-zA-Z0-9-.]+$'),
  displayName: z.string().min(1),
  hostName: perNode(z.string().min(1)),
  defaultGateway: z.boolean().default(true),
  dnsServerList: z.array(z.string().min(1)).default([]),
  dnsSearchDomainList: z.array(z.string().min(1)).default([]),
  routeList: z.array(cidr).default([]),
  excludeRouteList: z.array(cidr).default([]),
  aclPermissionList: z.array(z.string()).nullable().default(null),
  nodeUrl: perNode(z.url({ protocol: /^https?$/ })).default('http://127.0.0.1:41194'),
  onNode: z.union([z.int().nonnegative(), z.array(z.int().nonnegative()).min(1)]).optional(),
  preferredProto: z.enum(['wireguard', 'openvpn']).optional(),
  wRangeFour: perNode(cidr).optional(),
  wRangeSix: perNode(cidr).optional(),
  wKeepAlive: z.boolean().default(false),
  oRangeFour: perNode(cidr).optional(),
  oRangeSix: perNode(cidr).optional(),
  /** One OpenVPN process per port (reference §8.4); UDP + TCP count must be 1, 2, 4, …, 64. */
  oUdpPortList: z.array(port).default([1194]),
  oTcpPortList: z.array(port).default([1194]),
  /** Ports written into client files instead of the real ones (port sharing, NAT). */
  oExposedUdpPortList: z.array(port).default([]),
  oExposedTcpPortList: z.array(port).default([]),
  oBlockLan: z.boolean().default(false),
  oEnableLog: z.boolean().default(false),
  oListenOn: perNode(z.string().min(1)).default('::'),
  hideProfile: z.boolean().default(false),
  profilePriority: z.int().default(0),
  /** "Always on" in the Apple profile: on-demand rules (docs/apple-profiles.md); absent: none unless a call asks. */
  appleOnDemand: z
    .strictObject({
      /** Wi-Fi names where the tunnel disconnects: 1 to 32 bytes each, as an SSID is. */
      trustedSsids: z
        .array(
          z
            .string()
            .min(1, 'an SSID cannot be empty')
            .refine((ssid) => Buffer.byteLength(ssid) <= 32, 'an SSID is at most 32 bytes (UTF-8)'),
        )
        .default([]),
      /** A URL answering 200 only inside the trusted network; https, so no one outside can fake the answer. */
      probeUrl: z.url({ protocol: /^https$/, error: 'must be an https:// URL' }).optional(),
    })
    .optional(),
});

export const wireGuardSchema = z.strictObject({
  listenPort: z.int().min(1).max(65535).default(51820),
  setMtu: z.int().min(1280).max(9000).optional(),
  /** WireGuard over TCP through ProxyGuard (reference §2.2, §7.1). */
  enableProxy: z.boolean().default(false),
  /** No WireGuard over UDP at all; needs enableProxy (checked in load.ts, naming both options). */
  onlyProxy: z.boolean().default(false),
  /** Base of the client's `ProxyEndpoint`; default `https://<host of baseUrl>/proxyguard`. */
  proxyUrl: z.url({ protocol: /^https?$/ }).optional(),
});

export const portalConfigSchema = z.strictObject({
  /** Default: `http://<listen.host>:<listen.port>/vpn-user-portal/` (load.ts). */
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  listen: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.int().min(0).max(65535).default(8080),
      /** Open connections one source address may hold; beyond it a new one is closed at once. */
      maxConnectionsPerAddress: z.int().min(1).max(1_000_000).default(256),
      /** Headers and body of a request must have arrived within this time (408 otherwise). */
      requestTimeout: isoDuration.default('PT10S'),
      /** An idle keep-alive connection is closed after this time. */
      keepAliveTimeout: isoDuration.default('PT5S'),
    })
    .prefault({}),
  dataDir: z.string().min(1).default('./data'),
  /** `sqlite:PATH` or `postgres://USER:PASSWORD@HOST:PORT/DATABASE`; default `sqlite:<dataDir>/db.sqlite`. */
  database: z.string().regex(DATABASE_PATTERN, 'must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE').optional(),
  adminApi: z
    .strictObject({
      allowList: z.array(cidr).default(['127.0.0.0/8', '::1/128']),
      trustedProxyList: z.array(cidr).default([]),
    })
    .default({ allowList: ['127.0.0.0/8', '::1/128'], trustedProxyList: [] }),
  nodeApi: z
    .strictObject({
      /** Source addresses that may call the Node API; others get 403 before their body is read. */
      allowList: z.array(cidr).default(['0.0.0.0/0', '::/0']),
    })
    .prefault({}),
  /** The public endpoint where devices redeem enrollment tokens ({baseUrl}enroll). */
  enrollment: z
    .strictObject({
      /** Source addresses that may redeem tokens; others get 403 before their body is read. */
      allowList: z.array(cidr).default(['0.0.0.0/0', '::/0']),
      /** Requests per minute one source address (an IPv6 /64) may send to it; beyond: 429. */
      requestsPerMinute: z.int().min(1).max(100_000).default(30),
    })
    .prefault({}),
  /** Prometheus metrics, /healthz and /readyz on a listen address of their own; null: not served. */
  metrics: z
    .strictObject({
      listen: z
        .string()
        .regex(/^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/, 'must be HOST:PORT, e.g. 127.0.0.1:9466 or [::1]:9466')
        .nullable()
        .default('127.0.0.1:9466'),
    })
    .prefault({}),
  /** Signed webhooks (README, "Webhooks"). */
  webhooks: z
    .strictObject({
      /** CIDR prefixes receivers may be in although they are loopback, link-local, private or the portal's own host. */
      allowPrivateTargets: z.array(cidr).default([]),
      /** An attempt that has no answer within this time failed. */
      timeout: isoDuration.default('PT10S'),
      /** A delivery that keeps failing is tried again, ever less often, this long (at least P1D), then marked failed. */
      retryFor: isoDuration.default('P3D'),
      /** Finished deliveries and their attempts are deleted by the daily housekeeping after this long. */
      deliveryLogRetention: isoDuration.default('P30D'),
    })
    .prefault({}),
  reconcileInterval: isoDuration.default('PT1M'),
  /** Closed connection_log rows older than this are deleted by the daily housekeeping (reference: one month). */
  connectionLogRetention: isoDuration.default('P1M'),
  /** A program run at every connect and disconnect with the reference's VPN_* environment (reference §9.4). */
  connectScriptPath: z.string().min(1).optional(),
  /** A connect script still running after this long is killed (an OpenVPN connect is then refused). */
  connectScriptTimeout: isoDuration.default('PT10S'),
  /** The reference's syslog connection lines, written to the portal's log. */
  Log: z
    .strictObject({
      syslogConnectionEvents: z.boolean().default(false),
      originatingIp: z.boolean().default(false),
    })
    .prefault({}),
  /** Longest wait for the database (a connection, a lock, one statement) before a call answers 503. */
  databaseTimeout: isoDuration.default('PT5S'),
  /** PostgreSQL connections each portal instance keeps (1–100); PostgreSQL's own max_connections must hold every instance's. */
  databasePoolSize: z.int().min(1).max(100).default(10),
  /** How long audit log entries are kept (ISO 8601 duration). */
  auditLogRetention: isoDuration.default('P1Y'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  sessionExpiry: isoDuration.default('P90D'),
  /** `configuration.expiring` is announced this long before a configuration expires. */
  expiryWarning: isoDuration.default('P7D'),
  /** Lifetime of the OpenVPN CA made by generate-secrets; it caps every configuration's expiry. */
  caExpiry: isoDuration.default('P25Y'),
  supportedSessionExpiry: z.array(isoDuration).default([]),
  WireGuard: wireGuardSchema.prefault({}),
  /** Signed Apple profiles: PEM files, relative paths from the configuration file's folder (docs/apple-profiles.md). */
  apple: z
    .strictObject({
      signingCertificate: z.string().min(1).optional(),
      signingKey: z.string().min(1).optional(),
      /** The certificates between the signing certificate and a root the devices trust. */
      signingChain: z.string().min(1).optional(),
    })
    .prefault({}),
  ProfileList: z.array(profileSchema).min(1),
});

export type PortalConfigFile = z.input<typeof portalConfigSchema>;
export type ParsedPortalConfig = z.output<typeof portalConfigSchema>;
export type ParsedProfile = z.output<typeof profileSchema>;
export type ProfileConfigFile = z.input<typeof profileSchema>;
