// The validated, resolved configuration the rest of the portal works with: per-node
// options are already picked for each node (reference §1.3), durations parsed, paths absolute.
import type { NodeNumber, ProfileId, VpnProto } from '../shared/ids.js';
import type { Platform } from '../shared/platforms.js';
import type { IsoDuration } from '../shared/iso-duration.js';
import type { Secret } from '../shared/secret.js';
import type { AppleOnDemand } from '../apple/mobileconfig.js';
import type { ProfileSigningMaterial } from '../apple/profile-signing.js';
import type { ConsoleOidcSettings } from './console-oidc.js';
import type { SyslogFacilityName } from './syslog-facilities.js';

export interface WireGuardRange {
  readonly rangeFour: string;
  readonly rangeSix: string;
}

/** OpenVPN on one node: the client ranges (split among the processes) and the bind address. */
export interface OpenVpnRange {
  readonly rangeFour: string;
  readonly rangeSix: string;
  /** `oListenOn`: `::` (all addresses) unless set. */
  readonly listenOn: string;
}

/** A profile as deployed on one node. */
export interface ProfileNode {
  readonly nodeNumber: NodeNumber;
  readonly nodeUrl: string;
  readonly hostName: string;
  readonly wireGuard: WireGuardRange | null;
  readonly openVpn: OpenVpnRange | null;
}

/** A profile's OpenVPN options (reference §2.1), the same on every node. */
export interface OpenVpnProfileSettings {
  /** One server process per port: UDP ports first, then TCP ports (reference §8.4). */
  readonly udpPortList: readonly number[];
  readonly tcpPortList: readonly number[];
  /** When non-empty, written into client files instead of the real ports. */
  readonly exposedUdpPortList: readonly number[];
  readonly exposedTcpPortList: readonly number[];
  readonly blockLan: boolean;
  readonly enableLog: boolean;
}

export interface Profile {
  readonly profileId: ProfileId;
  readonly displayName: string;
  readonly defaultGateway: boolean;
  readonly dnsServerList: readonly string[];
  readonly dnsSearchDomainList: readonly string[];
  readonly routeList: readonly string[];
  readonly excludeRouteList: readonly string[];
  /**
   * eduVPN's `aclPermissionList` (null: none). Not enforced here (users here carry no
   * permissions); the eduVPN import reads it to leave the OpenVPN certificates eduVPN refuses.
   */
  readonly aclPermissionList: readonly string[] | null;
  readonly preferredProto: VpnProto;
  /** null when the profile has no WireGuard ranges. */
  readonly wireGuard: { readonly keepAlive: boolean } | null;
  /** null when the profile has no OpenVPN ranges. */
  readonly openVpn: OpenVpnProfileSettings | null;
  /** `appleOnDemand`: on-demand rules of its Apple profiles; null: none unless a call asks (`on_demand=yes`). */
  readonly appleOnDemand: AppleOnDemand | null;
  readonly nodes: readonly ProfileNode[];
}

export interface VpnNode {
  readonly nodeNumber: NodeNumber;
  readonly nodeUrl: string;
}

/**
 * WireGuard over TCP (reference §2.2 `enableProxy`, `onlyProxy`, `proxyUrl`): off, or on
 * next to UDP, or the only WireGuard transport.
 */
export type WireGuardProxy =
  | { readonly enabled: false }
  | {
      readonly enabled: true;
      /** `onlyProxy`: WireGuard over UDP is not offered. */
      readonly only: boolean;
      /** `proxyUrl` without trailing slashes; null: `https://<host of baseUrl>/proxyguard`. */
      readonly proxyUrl: string | null;
    };

export interface WireGuardSettings {
  readonly listenPort: number;
  readonly mtu: number | null;
  readonly proxy: WireGuardProxy;
}

/** Where the data lives: an SQLite file, or a PostgreSQL database shared by several portal instances. */
export type DatabaseLocation =
  | { readonly dialect: 'sqlite'; readonly path: string }
  /** `url` may hold a password: print it only through `describeDatabase` (src/config/database-location.ts). */
  | { readonly dialect: 'postgres'; readonly url: string };

/** The HTTP server of the Admin API and the Node API, and the bounds that keep slow clients from starving others. */
export interface ListenSettings {
  readonly host: string;
  readonly port: number;
  /** Open connections per source address; addresses in `adminApi.trustedProxyList` have no cap. */
  readonly maxConnectionsPerAddress: number;
  /** Headers and body of a request must arrive within this time. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this time. */
  readonly keepAliveTimeoutMs: number;
}

/** Signed webhooks: where they may go, how long an attempt may take, how long they are retried and logged. */
export interface WebhookSettings {
  /** CIDR prefixes a receiver may be in although it is loopback, link-local, private or the portal's own host. */
  readonly allowPrivateTargets: readonly string[];
  readonly timeoutMs: number;
  readonly retryFor: IsoDuration;
  readonly deliveryLogRetention: IsoDuration;
}

/** One RADIUS accounting server (`accounting.radius.servers[]`), its shared secret read at start. */
export interface RadiusServer {
  /** `HOST:PORT` as configured: the server's name in the outbox, the logs and the metrics. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly secret: Secret;
  /** null: the node's host name. */
  readonly nasIdentifier: string | null;
}

/** `accounting.radius`: no servers, no RADIUS accounting. */
export interface RadiusAccountingSettings {
  readonly servers: readonly RadiusServer[];
  readonly interimIntervalMs: number;
  readonly maxAge: IsoDuration;
  /** `maxAge` as configured, for messages. */
  readonly maxAgeText: string;
}

/** Where the MDM's inventory is read (`mdmInventory`), the client secret read at start. */
export type MdmInventorySource =
  | {
      readonly provider: 'intune';
      readonly clientId: string;
      readonly clientSecret: Secret;
      /** The OAuth 2.0 token endpoint (Microsoft's for the tenant unless `tokenUrl` says otherwise). */
      readonly tokenUrl: string;
      /** Microsoft Graph's base, without a trailing slash. */
      readonly graphUrl: string;
    }
  | { readonly provider: 'jamf'; readonly url: string; readonly clientId: string; readonly clientSecret: Secret }
  | { readonly provider: 'json'; readonly url: string; readonly headers: Readonly<Record<string, Secret>> };

/** `maxRetirePerPass`: a count, or a percentage of the live devices. */
export type RetireLimit =
  | { readonly kind: 'count'; readonly count: number }
  | { readonly kind: 'percent'; readonly percent: number };

export interface MdmInventoryConfig {
  readonly source: MdmInventorySource;
  readonly matches: 'serial' | 'mdm_id';
  readonly intervalMs: number;
  readonly maxRetirePerPass: RetireLimit;
  /** `compliance`: devices follow the MDM's compliance; null: not done. */
  readonly compliance: MdmComplianceConfig | null;
}

/** `mdmInventory.compliance`. */
export interface MdmComplianceConfig {
  /** What an undetermined compliance state (Intune's `unknown`, `conflict`, `error`, …) gets. */
  readonly undetermined: 'keep' | 'suspend';
  /** A device whose last check-in is older than this is suspended as `stale`; null: never. */
  readonly staleAfterMs: number | null;
  readonly maxSuspendPerPass: RetireLimit;
}

/** `mdmPush.jamf`: Jamf Pro's webhooks at {baseUrl}mdm/jamf, their secrets read at start. */
/** The smart groups of one kind of device (Jamf Pro numbers each kind's groups apart), by Jamf id and by name. */
export interface JamfGroups {
  readonly ids: ReadonlySet<number>;
  readonly names: ReadonlySet<string>;
}

export interface JamfPushConfig {
  /** Smart groups whose members may use the VPN, per kind of device; an entry that names no kind is in both. */
  readonly allowedGroups: { readonly computer: JamfGroups; readonly mobile: JamfGroups };
  readonly basicAuth: { readonly username: string; readonly password: Secret } | null;
  /** `name` in lower case, as Node gives request headers. */
  readonly headerAuth: { readonly name: string; readonly value: Secret } | null;
  readonly allowList: readonly string[];
}

/**
 * A revocation list of `enrollment.clientCertificate.crl`: an absolute file path, or an http(s)
 * URL; `issuer`: the PEM of the CA whose lists it serves, when the entry names one.
 */
export type CrlSource = (
  | { readonly kind: 'file'; readonly location: string; readonly initial: Buffer }
  | { readonly kind: 'url'; readonly location: string }
) & { readonly issuer: string | null };

/** How a device certificate is checked (`enrollment.clientCertificate`), its files read at start. */
export interface ClientCertificateConfig {
  /** PEM texts. */
  readonly trustAnchors: readonly string[];
  /** PEM texts of intermediate CAs whose revocation lists are verified with them (they must lead to a trust anchor). */
  readonly intermediates: readonly string[];
  readonly deviceId: {
    readonly from: 'san-uri' | 'subject-serial' | 'subject-cn';
    readonly prefix?: string;
    readonly matches: 'serial' | 'mdm_id';
  };
  /** Where each revocation list is read again every crlRefreshMs: a file (its contents at start) or an http(s) URL (fetched once the portal runs). */
  readonly crlSources: readonly CrlSource[];
  readonly crlRefreshMs: number;
  /** A list that would retire more devices at once waits for an administrator's confirmation. */
  readonly crlMaxRetire: RetireLimit;
  /** The request header of `{baseUrl}enroll` in which a proxy of trustedProxyList forwards the certificate (URL-encoded PEM). */
  readonly header: string;
  /** The proxies (CIDR) whose forwarded certificate is believed; empty: nobody's. */
  readonly trustedProxyList: readonly string[];
  /** The request header in which such a proxy says it verified the certificate: only `SUCCESS` counts. */
  readonly verifiedHeader: string;
  /** With Intune: the tenant a certificate must carry in Intune's extension; null: not checked. */
  readonly intuneTenantId: string | null;
  /** Self-registration of an unregistered device id, for the user the certificate names; null: 403 instead. */
  readonly registerAs: {
    readonly from: 'san-email';
    readonly profileId: ProfileId;
    readonly platform: Platform | null;
  } | null;
}

/** A syslog collector (`accounting.syslog.collectors`), its CA read at start. */
export type SyslogCollectorConfig = {
  readonly host: string;
  readonly port: number;
  readonly facility: SyslogFacilityName;
  readonly appName: string;
  /** RFC 5424's HOSTNAME; `-` when the machine's name is not printable ASCII. */
  readonly hostname: string;
  /** Whether messages carry structured data; false: the text alone. */
  readonly structuredData: boolean;
  /** Whether the client's own address goes out; false: never, to this collector. */
  readonly clientAddress: boolean;
  readonly queueSize: number;
} & (
  | { readonly transport: 'udp' }
  | { readonly transport: 'tcp'; readonly framing: 'octet-counting' | 'newline' }
  | {
      readonly transport: 'tls';
      readonly framing: 'octet-counting' | 'newline';
      readonly caPem: string;
      readonly serverName: string;
    }
);

export interface PortalConfig {
  /** Where the configuration came from, for messages: a file path or "embedded default". */
  readonly source: string;
  readonly baseUrl: URL;
  /** Path prefix of every portal URL, without trailing slash ("" at the root). */
  readonly basePath: string;
  readonly listen: ListenSettings;
  readonly dataDir: string;
  readonly keyDir: string;
  readonly database: DatabaseLocation;
  /** `databaseTimeout`: the longest wait for the database (a connection, a lock, one statement), 1 s to 1 h. */
  readonly databaseTimeoutMs: number;
  /** `databaseRetryFor`: how long a lost PostgreSQL connection is made good (0 to 1 min; SQLite ignores it). */
  readonly databaseRetryForMs: number;
  /** `databasePoolSize`: PostgreSQL connections this instance keeps (2–100; SQLite has one). */
  readonly databasePoolSize: number;
  /** `databasePreparedStatements`: PostgreSQL statements run again and again are prepared on each connection. */
  readonly databasePreparedStatements: boolean;
  /** `metrics.listen`: where /metrics, /healthz and /readyz are served; null: not served. */
  readonly metrics: { readonly host: string; readonly port: number } | null;
  readonly adminApi: { readonly allowList: readonly string[]; readonly trustedProxyList: readonly string[] };
  /** `adminConsole`: the browser console at {baseUrl}admin/, and how long its sessions last. */
  readonly adminConsole: {
    readonly enabled: boolean;
    readonly idleTimeoutMs: number;
    readonly sessionLifetimeMs: number;
    /** `adminConsole.oidc`: single sign-on through an OpenID provider; null: off. */
    readonly oidc: ConsoleOidcSettings | null;
  };
  readonly nodeApi: { readonly allowList: readonly string[] };
  readonly webhooks: WebhookSettings;
  /** `scim`: who may call {baseUrl}scim/v2/, and which SCIM groups grant which profiles. */
  readonly scim: {
    readonly allowList: readonly string[];
    /** Whether a POST for a user made otherwise links it to the directory (default); false: refused (409). */
    readonly linkExistingUsers: boolean;
    /** Group displayName → the profiles its members may hold; empty: groups grant and take nothing. */
    readonly groupProfiles: ReadonlyMap<string, readonly ProfileId[]>;
  };
  /** Where sessions are reported (RADIUS accounting). */
  readonly accounting: {
    readonly radius: RadiusAccountingSettings;
    /** `accounting.syslog`: the collectors told of every session start and stop (none: not sent). */
    readonly syslog: { readonly enterpriseNumber: number; readonly collectors: readonly SyslogCollectorConfig[] };
  };
  /** `enrollment`: who may redeem enrollment tokens at {baseUrl}enroll, and how often per source address. */
  readonly enrollment: {
    readonly allowList: readonly string[];
    readonly requestsPerMinute: number;
    /** Mutual-TLS enrollment, for devices that prove themselves with their MDM certificate: where, with which server certificate and key (PEM texts read at start). */
    readonly tls: {
      readonly host: string;
      readonly port: number;
      readonly certificatePem: string;
      readonly keyPem: string;
    } | null;
    readonly clientCertificate: ClientCertificateConfig | null;
  };
  readonly reconcileIntervalMs: number;
  /** `mdmInventory`: devices gone from the MDM's inventory are retired; null: not done. */
  readonly mdmInventory: MdmInventoryConfig | null;
  /** `mdmPush`: MDMs that push their changes; `jamf` null: Jamf Pro's webhooks are not served. */
  readonly mdmPush: { readonly jamf: JamfPushConfig | null };
  /** `connectionLogRetention`: closed history older than this is deleted by housekeeping. */
  readonly connectionLogRetention: IsoDuration;
  /** `originatingIpRetention`: the client's own address is blanked in history rows older than this. */
  readonly originatingIpRetention: IsoDuration;
  /** The connection hook (reference §9.4), or null. */
  readonly connectScript: { readonly path: string; readonly timeoutMs: number } | null;
  /** The reference's syslog connection lines (`Log.syslogConnectionEvents`), with or without the client's address. */
  readonly connectionLogLines: { readonly enabled: boolean; readonly originatingIp: boolean };
  readonly logLevel: string;
  /** `lookups`: which look-ups of people by address must give a reason. */
  readonly lookups: { readonly requireReason: { readonly attribution: boolean; readonly connectionLog: boolean } };
  /** `auditLogRetention`: audit log entries older than this are pruned. */
  readonly auditLogRetention: IsoDuration;
  /** `revocationDeadline`: a revocation receipt still pending this long after its call is overdue. */
  readonly revocationDeadlineMs: number;
  readonly sessionExpiry: IsoDuration;
  /** `expiryWarning`: how long before its expiry a configuration is announced as expiring. */
  readonly expiryWarning: IsoDuration;
  /** Lifetime of a new OpenVPN CA (generate-secrets). */
  readonly caExpiry: IsoDuration;
  /** `sessionExpiry` followed by `supportedSessionExpiry`, duplicates dropped (reference §10). */
  readonly supportedSessionExpiry: readonly string[];
  readonly wireGuard: WireGuardSettings;
  /** `apple.signing*`: the material that signs Apple profiles, read and checked at load; null: profiles go out unsigned. */
  readonly appleSigning: ProfileSigningMaterial | null;
  /**
   * What the configuration allows but an administrator should hear of, one line each naming the
   * option, logged at start: secret files group or others may read (`enrollment.tls.key`,
   * `apple.signingKey`, `mdmInventory.clientSecretFile`), Jamf Pro groups named without their kind.
   */
  readonly startWarnings: readonly string[];
  readonly profiles: readonly Profile[];
  /** Every node any profile is on, by node number. */
  readonly nodes: ReadonlyMap<NodeNumber, VpnNode>;
}

export function findProfile(config: PortalConfig, profileId: string): Profile | undefined {
  return config.profiles.find((profile) => profile.profileId === profileId);
}
