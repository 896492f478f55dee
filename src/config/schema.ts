// The portal's configuration file: one JSON document. Option names follow the eduVPN
// server (reference §2) so an eduVPN administrator recognises them; the portal's own
// options (baseUrl, listen, dataDir, database, databaseTimeout, databaseRetryFor, databasePoolSize,
// databasePreparedStatements, adminApi, adminConsole, nodeApi, enrollment,
// scim, webhooks, accounting, apple, reconcileInterval, logLevel, auditLogRetention, revocationDeadline, lookups) are ours. Every option's meaning is
// written here, once: docs/configuration.md is generated from these descriptions (npm run docs).
// Unknown keys are rejected so a typo never goes unnoticed.
import { z } from 'zod';
import { consoleOidcSchema } from './console-oidc.js';
import { DATABASE_PATTERN } from './database-location.js';
import { isBoundedIsoDuration, MAX_DURATION, parseIsoDuration } from '../shared/iso-duration.js';
import { MAX_NODE_NUMBER } from '../shared/ids.js';
import { PLATFORMS } from '../shared/platforms.js';
import { SYSLOG_FACILITY_NAMES } from './syslog-facilities.js';
import { WIREGUARD_MTU } from './wireguard-mtu.js';

const PROFILE_ID = /^[a-zA-Z0-9-.]+$/;

const cidr = z.string().min(1).meta({ format: 'ip-prefix' });
const port = z.int().min(1).max(65535);
const isoDuration = z
  .string()
  .meta({ format: 'iso-8601-duration' })
  .refine((text) => parseIsoDuration(text) !== null, { message: 'not an ISO 8601 duration such as P90D or PT12H' })
  // The Admin API's own bound: a configured lifetime it would refuse in `expires_in` is no use.
  .refine((text) => parseIsoDuration(text) === null || isBoundedIsoDuration(text), {
    message: `too long: a duration of at most ${MAX_DURATION}`,
  });
/** A node number, as a node can name itself in the node API (at most six digits). */
const nodeNumber = z.int().nonnegative().max(MAX_NODE_NUMBER);

/** A per-node option: one value for every node, or one value per entry of `onNode`. */
const perNode = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1)]);

export const profileSchema = z.strictObject({
  profileId: z
    .string()
    .regex(PROFILE_ID, 'must match ^[a-zA-Z0-9-.]+$')
    .describe("The profile's id, `^[a-zA-Z0-9-.]+$`, unique."),
  displayName: z.string().min(1).describe('Shown to people.'),
  hostName: perNode(z.string().min(1)).describe(
    "Per node: the client `Endpoint` / OpenVPN `remote` host, a DNS name (ASCII form) or an IP address without port or brackets; the CN of the node's OpenVPN server certificate.",
  ),
  defaultGateway: z.boolean().default(true).meta({
    description: 'Full tunnel (`0.0.0.0/0,::/0`): the node must forward and masquerade.',
    see: 'node-agent.md#full-tunnel-forwarding-and-nat',
  }),
  dnsServerList: z
    .array(z.string().min(1))
    .default([])
    .describe(
      "DNS servers: IP addresses, `@GW4@`/`@GW6@` = the node's tunnel address; sent only with `defaultGateway` or search domains (the portal warns at start about a profile whose servers are dropped).",
    ),
  dnsSearchDomainList: z.array(z.string().min(1)).default([]).describe('Search domains (DNS names).'),
  routeList: z.array(cidr).default([]).describe('Extra prefixes routed through the tunnel.'),
  excludeRouteList: z.array(cidr).default([]).describe('Prefixes carved out of the routed ones.'),
  aclPermissionList: z
    .array(z.string())
    .nullable()
    .default(null)
    .describe(
      'Accepted for compatibility; the Admin API does not use it (as the reference), and OpenVPN connects do not enforce it. The eduVPN import leaves the OpenVPN configurations eduVPN refused for it.',
    ),
  nodeUrl: perNode(z.url({ protocol: /^https?$/ }))
    .default('http://127.0.0.1:41194')
    .describe("Per node: the node's vpn-daemon protocol URL."),
  onNode: z
    .union([nodeNumber, z.array(nodeNumber).min(1)])
    .optional()
    .meta({
      description:
        "Node numbers the profile runs on. A per-node option takes the value at the position of the node in `onNode` (as in the reference), not at the node's number.",
      defaultText: '`0 … count(nodeUrl)-1`',
    }),
  preferredProto: z.enum(['wireguard', 'openvpn']).optional().meta({
    description: 'The protocol offered first.',
    defaultText: '`openvpn` when the profile has both protocols, else the one it has',
  }),
  wRangeFour: perNode(cidr)
    .optional()
    .describe(
      'Per node, needed for WireGuard: the IPv4 client prefix. No two client ranges (WireGuard or OpenVPN, any profile, any node) may overlap.',
    ),
  wRangeSix: perNode(cidr)
    .optional()
    .describe('Per node, needed for WireGuard: the IPv6 client prefix, paired one to one with the IPv4 addresses.'),
  wKeepAlive: z.boolean().default(false).describe('`PersistentKeepalive = 25` in client files.'),
  oRangeFour: perNode(cidr).optional().meta({
    description:
      "Per node, needed for OpenVPN: the IPv4 client prefix, split evenly among the node's OpenVPN processes (each part at least a /29).",
    see: 'openvpn.md',
  }),
  oRangeSix: perNode(cidr)
    .optional()
    .describe('Per node, needed for OpenVPN: the IPv6 client prefix; one /112 of it per OpenVPN process.'),
  /** Reference §8.4. */
  oUdpPortList: z
    .array(port)
    .default([1194])
    .describe('One OpenVPN process per port; UDP and TCP ports together 1, 2, 4, 8, 16, 32 or 64.'),
  oTcpPortList: z.array(port).default([1194]).describe('One OpenVPN process per port, as `oUdpPortList`.'),
  oExposedUdpPortList: z
    .array(port)
    .default([])
    .describe(
      'Ports written into client files instead (port sharing, NAT); files list at most one normal and one "special" port (UDP 53/443) per transport, as the reference.',
    ),
  oExposedTcpPortList: z.array(port).default([]).describe('As `oExposedUdpPortList`, for TCP (special ports: 80/443).'),
  oBlockLan: z.boolean().default(false).describe('Adds `block-local` to the pushed `redirect-gateway`.'),
  oEnableLog: z
    .boolean()
    .default(false)
    .describe("OpenVPN's own log goes to the node agent's log (debug level) instead of `/dev/null`."),
  oListenOn: perNode(z.string().min(1))
    .default('::')
    .describe(
      'Per node: the address the OpenVPN processes bind to (IPv4 → `udp`/`tcp-server`, otherwise `udp6`/`tcp6-server`).',
    ),
  hideProfile: z
    .boolean()
    .default(false)
    .describe('Accepted for compatibility; the Admin API does not use it (as the reference).'),
  profilePriority: z
    .int()
    .default(0)
    .describe('Accepted for compatibility; the Admin API does not use it (as the reference).'),
  appleOnDemand: z
    .strictObject({
      trustedSsids: z
        .array(
          z
            .string()
            .min(1, 'an SSID cannot be empty')
            .refine((ssid) => Buffer.byteLength(ssid) <= 32, 'an SSID is at most 32 bytes (UTF-8)'),
        )
        .default([])
        .describe('Wi-Fi names (1 to 32 bytes each, as an SSID is) where the tunnel disconnects.'),
      probeUrl: z
        .url({ protocol: /^https$/, error: 'must be an https:// URL' })
        .optional()
        .describe(
          'A URL that answers 200 only inside the trusted network; https, so no one outside can fake the answer.',
        ),
    })
    .optional()
    .meta({
      description:
        '"Always on" in the Apple profile: `OnDemandEnabled` and `OnDemandRules` (disconnect on trusted Wi-Fi, disconnect when the probe answers, else connect). Absent: none, unless a call asks with `on_demand=yes`.',
      see: 'apple-profiles.md',
    }),
});

export const wireGuardSchema = z.strictObject({
  listenPort: z
    .int()
    .min(1)
    .max(65535)
    .default(51820)
    .describe("UDP port of every node's WireGuard interface, and the client `Endpoint` port."),
  setMtu: z
    .int()
    .min(WIREGUARD_MTU.min)
    .max(WIREGUARD_MTU.max)
    .optional()
    .describe('`MTU =` in client files and on the node interface; unset: none.'),
  /** WireGuard over TCP through ProxyGuard (reference §2.2, §7.1). */
  enableProxy: z.boolean().default(false).meta({
    description:
      'WireGuard over TCP: `create` also serves `application/x-wireguard+tcp-profile`, and every node agent runs its ProxyGuard relay.',
    see: 'wireguard-over-tcp.md',
  }),
  /** No WireGuard over UDP at all; needs enableProxy (checked in wireguard-options.ts, naming both options). */
  onlyProxy: z
    .boolean()
    .default(false)
    .describe(
      'No WireGuard over UDP: neither `application/x-wireguard-profile` nor the Apple profile (it carries the UDP file); needs `enableProxy`.',
    ),
  /** Base of the client's `ProxyEndpoint`; default `https://<host of baseUrl>/proxyguard`. */
  proxyUrl: z
    .url({ protocol: /^https?$/ })
    .optional()
    .meta({
      description:
        "Base of the files' `ProxyEndpoint`: `<proxyUrl>/<hostName>` (trailing slashes dropped; no query or fragment).",
      defaultText:
        '`https://<host name of baseUrl>/proxyguard`, whatever scheme and port `baseUrl` has (as the reference derives it)',
    }),
});

/**
 * One smart group of `mdmPush.jamf.allowedGroups`, named with its kind: Jamf Pro numbers computer
 * groups and mobile device groups apart, so computer group 12 and mobile device group 12 are two groups.
 */
const jamfGroupOfKind = z
  .strictObject({
    kind: z.enum(['computer', 'mobileDevice']),
    id: z.int().min(1).optional(),
    name: z.string().min(1).max(255).optional(),
  })
  .refine((group) => (group.id === undefined) !== (group.name === undefined), 'needs either "id" or "name", not both');

/** One syslog collector of `accounting.syslog.collectors`. */
const syslogCollectorSchema = z.strictObject({
  transport: z
    .enum(['udp', 'tcp', 'tls'])
    .describe('`udp` (RFC 5426, one datagram a message), `tcp` (RFC 6587, see `framing`) or `tls` (RFC 5425).'),
  address: z
    .string()
    .regex(/^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/, 'must be HOST:PORT, e.g. siem.example.org:6514')
    .describe('`HOST:PORT` of the collector (IPv6 in brackets); 514 is usual for UDP and TCP, 6514 for TLS.'),
  framing: z.enum(['octet-counting', 'newline']).optional().meta({
    description:
      '`tcp`, `tls`: how messages are delimited on the stream: `octet-counting` (RFC 6587 section 3.4.1, the standard), or `newline`, one message a line, for receivers that read lines (Palo Alto User-ID).',
    defaultText: '`octet-counting`',
  }),
  caFile: z
    .string()
    .min(1)
    .optional()
    .describe(
      "`tls` (required there): PEM file of the CA(s) the collector's certificate must chain to, relative to the configuration file's folder.",
    ),
  serverName: z
    .string()
    .min(1)
    .optional()
    .describe("`tls`: the name the collector's certificate must carry; default: the host of `address`."),
  facility: z
    .enum(SYSLOG_FACILITY_NAMES)
    .default('authpriv')
    .describe('The facility of the messages (their severity is informational).'),
  appName: z
    .string()
    .regex(/^[\x21-\x7e]{1,48}$/, 'must be 1 to 48 printable ASCII characters without spaces')
    .default('vpn-portal')
    .describe('The APP-NAME of the messages.'),
  hostname: z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/, 'must be 1 to 255 printable ASCII characters without spaces')
    .optional()
    .meta({ description: 'The HOSTNAME of the messages.', defaultText: "the machine's host name" }),
  structuredData: z
    .boolean()
    .default(true)
    .describe(
      'Send the structured data (every value whole, in UTF-8; `%`, control characters and line separators percent-encoded); `false`: the text alone, for a receiver that parses only the text (a firewall), where no value of the structured data can be taken for a text field.',
    ),
  clientAddress: z.boolean().optional().meta({
    description:
      "Send the client's own (public) address; `false`: `client=-` and no `originating_ip`, for a receiver that needs only the tunnel addresses (a firewall). The address is personal data: unless set, it goes out only where the portal keeps it (`Log.originatingIp`).",
    defaultText: '`Log.originatingIp`',
  }),
  queueSize: z
    .int()
    .min(1)
    .max(1_000_000)
    .default(10_000)
    .describe(
      'Messages held while the collector cannot take them (down, slow, reconnecting); one more is dropped and counted in `vpn_portal_syslog_messages_dropped_total`.',
    ),
});

export const portalConfigSchema = z.strictObject({
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .optional()
    .meta({
      description:
        'The public address of the portal including its path prefix; the Admin API is at `{baseUrl}admin/api/v1/`, the Node API at `{baseUrl}node-api.php/`.',
      defaultText: '`http://<listen.host>:<listen.port>/vpn-user-portal/` (`0.0.0.0` → `127.0.0.1`, `::` → `[::1]`)',
    }),
  listen: z
    .strictObject({
      host: z
        .string()
        .min(1)
        .default('127.0.0.1')
        .describe('Where the HTTP server (Admin API, Node API, enroll) listens.'),
      port: z.int().min(0).max(65535).default(8080).describe('The port of `listen.host`.'),
      maxConnectionsPerAddress: z.int().min(1).max(1_000_000).default(256).meta({
        description:
          'Open connections one source address (an IPv6 client: its /64) may hold; one more is closed at once, unanswered. Direct peers in `adminApi.trustedProxyList` have no cap.',
        see: 'operations.md#connections-and-slow-clients',
      }),
      requestTimeout: isoDuration
        .default('PT10S')
        .describe("A request's headers and body must have arrived within this time (PT1S–PT10M), else 408."),
      keepAliveTimeout: isoDuration
        .default('PT5S')
        .describe('An idle keep-alive connection is closed after this time (PT1S–PT10M).'),
    })
    .prefault({}),
  dataDir: z.string().min(1).default('./data').meta({
    description:
      "The database and the keys (`DATA/keys`); made 0700 at start. A relative path is taken from the configuration file's folder.",
    see: 'operations.md#database-files-and-outages',
  }),
  database: z
    .string()
    .regex(DATABASE_PATTERN, 'must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE')
    .optional()
    .meta({
      description:
        '`sqlite:PATH` (WAL mode, foreign keys on), or `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (over a Unix socket: `postgres://USER@/DATABASE?host=/var/run/postgresql`) for several portal instances on one database; the password is never logged.',
      defaultText: '`sqlite:<dataDir>/db.sqlite`',
      see: 'postgresql.md',
    }),
  adminApi: z
    .strictObject({
      allowList: z
        .array(cidr)
        .default(['127.0.0.0/8', '::1/128'])
        .describe('Source addresses (CIDR) allowed to use the Admin API; checked before anything else (403).'),
      trustedProxyList: z
        .array(cidr)
        .default([])
        .describe('Reverse proxies whose `X-Forwarded-For` is believed; from anyone else the header is ignored.'),
    })
    .default({ allowList: ['127.0.0.0/8', '::1/128'], trustedProxyList: [] }),
  adminConsole: z
    .strictObject({
      enabled: z.boolean().default(true).meta({
        description:
          'Serve the admin console at `{baseUrl}admin/` (same port and `adminApi.allowList` as the Admin API).',
        see: 'console.md',
      }),
      idleTimeout: isoDuration
        .default('PT30M')
        .describe('A console session unused this long ends (PT1M–P1D); the next page asks to sign in again.'),
      sessionLifetime: isoDuration
        .default('PT12H')
        .describe('A console session ends this long after sign-in, however busy (PT1M–P7D).'),
      oidc: consoleOidcSchema,
    })
    .prefault({}),
  nodeApi: z
    .strictObject({
      allowList: z
        .array(cidr)
        .default(['0.0.0.0/0', '::/0'])
        .describe(
          "Source addresses (CIDR) allowed to use the Node API: the node agents' addresses. Others get 403 before their body is read.",
        ),
    })
    .prefault({}),
  /** The public endpoint where devices redeem enrollment tokens ({baseUrl}enroll). */
  enrollment: z
    .strictObject({
      allowList: z.array(cidr).default(['0.0.0.0/0', '::/0']).meta({
        description:
          'Source addresses (CIDR) that may redeem enrollment tokens at `{baseUrl}enroll`; others get 403 before their body is read.',
        see: 'enrollment-and-devices.md#enrollment-tokens',
      }),
      requestsPerMinute: z
        .int()
        .min(1)
        .max(100_000)
        .default(30)
        .describe(
          'Requests one source address (an IPv6 client: its /64) may send to `{baseUrl}enroll` per minute, per portal instance; beyond it 429 with `Retry-After`.',
        ),
      tls: z
        .strictObject({
          listen: z
            .string()
            .regex(/^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/, 'must be HOST:PORT, e.g. 0.0.0.0:8443')
            .describe(
              '`HOST:PORT` (IPv6 in brackets) where `{baseUrl}enroll` is served over TLS, asking for a client certificate.',
            ),
          certificate: z
            .string()
            .min(1)
            .describe("The TLS server certificate (PEM, with its chain), relative to the configuration file's folder."),
          key: z.string().min(1).describe("The TLS server key (PEM), relative to the configuration file's folder."),
        })
        .nullable()
        .default(null)
        .meta({
          description:
            "Enrollment proven by the device's MDM certificate (mutual TLS); `null`: not served. Needs `enrollment.clientCertificate`.",
          see: 'devices.md#enrollment-with-the-mdm-certificate',
        }),
      clientCertificate: z
        .strictObject({
          trustAnchors: z
            .array(z.string().min(1))
            .min(1)
            .describe(
              "PEM files of the CAs a device certificate must chain to (the MDM's issuing CA or its root), relative to the configuration file's folder. One that the path rules refuse whatever is below it (CA:FALSE, nameConstraints, a critical extension the portal does not process, a keyUsage without keyCertSign) vouches for nothing: it is named at start in the log and in vpn_portal_trust_anchor_refused, and the portal starts.",
            ),
          intermediates: z
            .array(z.string().min(1))
            .default([])
            .describe(
              "PEM files of intermediate CAs under a trust anchor whose revocation lists are believed (signed by them) before a device enrolled with their chain; relative to the configuration file's folder. The CAs of enrolled chains are known anyway. One whose path to a trust anchor breaks a rule a device certificate's chain must keep is named at start, and its lists are refused.",
            ),
          deviceId: z
            .strictObject({
              from: z
                .enum(['san-uri', 'subject-serial', 'subject-cn'])
                .describe(
                  'Where the device id is read: a subjectAltName URI, the subject serialNumber, or the CN (`prefix-<guid>` read as the GUID).',
                ),
              prefix: z
                .string()
                .min(1)
                .optional()
                .describe('The id follows this prefix (e.g. `urn:mdm:serial:`); required to match when set.'),
              matches: z
                .enum(['serial', 'mdm_id'])
                .default('serial')
                .describe("The registered device whose `serial` (or `mdm_id`) equals the certificate's id."),
            })
            .describe('How the certificate names the device.'),
          crl: z
            .array(
              z.union([
                z.string().min(1),
                z.strictObject({
                  list: z.string().min(1).describe('The list: a file or an http(s) URL, as a plain entry.'),
                  issuer: z
                    .string()
                    .min(1)
                    .describe(
                      'A PEM file of the CA whose lists this source serves (a trust anchor, or a CA that leads to one): a list of any other CA is refused from it, from the first reading on.',
                    ),
                }),
              ]),
            )
            .default([])
            .meta({
              description:
                "Revocation lists (PEM or DER): files, relative to the configuration file's folder, or http(s) URLs; a certificate on its issuer's list is refused, and a device bound to it is retired. An entry `{list, issuer}` also names the CA whose lists the source serves: for a plain-http URL, so that whoever answers in its place cannot have another CA's list believed from it.",
              see: 'devices.md#enrollment-with-the-mdm-certificate',
            }),
          intuneTenantId: z
            .string()
            .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a GUID')
            .optional()
            .describe(
              "With Intune: the Azure AD tenant id a device certificate must carry in Intune's extension 1.2.840.113556.5.14.",
            ),
          header: z
            .string()
            .regex(/^[A-Za-z0-9-]+$/)
            .default('X-SSL-Client-Cert')
            .describe(
              "Behind a TLS reverse proxy (nginx `ssl_verify_client`): the request header of `{baseUrl}enroll` with the client certificate, URL-encoded PEM (nginx's `$ssl_client_escaped_cert`); believed only from `enrollment.clientCertificate.trustedProxyList` with `verifiedHeader` `SUCCESS`, refused (403) from any other peer.",
            ),
          trustedProxyList: z.array(cidr).default([]).meta({
            description:
              'Reverse proxies (CIDR) that verify the client certificate and forward it in `header` to `{baseUrl}enroll`; empty: a forwarded certificate is believed from nobody. Not `adminApi.trustedProxyList`.',
            see: 'devices.md#enrollment-with-the-mdm-certificate',
          }),
          verifiedHeader: z
            .string()
            .regex(/^[A-Za-z0-9-]+$/)
            .default('X-SSL-Client-Verify')
            .describe(
              "The request header in which the proxy says whether it verified the forwarded certificate (nginx's `$ssl_client_verify`); only `SUCCESS` is believed.",
            ),
          registerAs: z
            .strictObject({
              from: z
                .enum(['san-email'])
                .describe("Where the user id is read: the certificate's first subjectAltName e-mail address."),
              profileId: z
                .string()
                .min(1)
                .describe(
                  'The profile a self-registered device enrolls in, one of `ProfileList` (else the start is refused); a request naming another is refused (409). When `scim.groupProfiles` grants it, a user the directory provisioned registers into it only while one of their groups grants it.',
                ),
              platform: z
                .enum(PLATFORMS)
                .optional()
                .describe('Its platform, unless the request sends `platform` (then required).'),
            })
            .optional()
            .describe(
              'Self-registration: a certificate whose device id no live device has registers one, for the user its certificate names, instead of 403.',
            ),
          crlRefresh: isoDuration
            .default('PT5M')
            .describe(
              'How often the revocation lists are read again, PT1S to P1D; one that cannot be read, or is refused (not signed by the CA it names, not yet valid, past its nextUpdate), keeps the last good one (once that is past its nextUpdate, certificates of its CA wait, 503, for a current one) and is read again 10 s later, then twice as long after each failure, up to crlRefresh.',
            ),
          crlMaxRetire: z
            .union([z.int().min(1), z.string().regex(/^\d{1,3}(\.\d+)?%$/, 'a count, or a percentage such as "5%"')])
            .default('5%')
            .describe(
              'A revocation list that would retire more devices at once than this (a count, or a percentage of the live devices; at least 1) retires none until an administrator confirms it with `vpn-portal mdm confirm-crl`.',
            ),
        })
        .nullable()
        .default(null)
        .meta({
          description:
            'How a device certificate is checked, presented to `enrollment.tls` or forwarded to `{baseUrl}enroll` by a proxy in its `trustedProxyList`; `null`: no certificate enrollment.',
          see: 'devices.md#enrollment-with-the-mdm-certificate',
        }),
    })
    .prefault({}),
  metrics: z
    .strictObject({
      listen: z
        .string()
        .regex(/^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/, 'must be HOST:PORT, e.g. 127.0.0.1:9466 or [::1]:9466')
        .nullable()
        .default('127.0.0.1:9466')
        .meta({
          description: '`HOST:PORT` (IPv6 in brackets) of `/metrics`, `/healthz` and `/readyz`; `null`: not served.',
          see: 'operations.md#metrics-and-health',
        }),
    })
    .prefault({}),
  scim: z
    .strictObject({
      allowList: z.array(cidr).default(['0.0.0.0/0', '::/0']).meta({
        description:
          "Source addresses (CIDR) that may call SCIM at `{baseUrl}scim/v2/` (a directory's provisioning client: Entra ID, Okta); others get 403 before their body is read. A `scim` key's own allow-list applies as well.",
        see: 'scim.md',
      }),
      linkExistingUsers: z.boolean().default(true).meta({
        description:
          "Whether a SCIM `POST /Users` whose userName is a user made otherwise (by `create`, enrollment, a device registration, the eduVPN import) links that user to the directory, which may then disable and delete it as it does the users it made. `false` narrows a `scim` key to the users the directory made: such a POST is refused (409) and the user stays the administrators' alone, also when the person leaves.",
        see: 'scim.md#users-already-on-the-portal',
      }),
      groupProfiles: z
        .record(z.string().min(1).max(255), z.array(z.string().min(1)).min(1))
        .default({})
        .meta({
          description:
            "SCIM group displayName → the profile ids its members may hold. A user the directory provisioned who is in no group granting a profile named here loses that profile's configurations (a revocation receipt each); profiles named by no group are untouched. An edit that may take more is applied to every provisioned user at the next start. `{}`: groups grant nothing and take nothing.",
          see: 'scim.md#groups-and-profiles',
        }),
    })
    .prefault({}),
  webhooks: z
    .strictObject({
      allowPrivateTargets: z.array(cidr).default([]).meta({
        description:
          "CIDR prefixes a webhook receiver may be in although they are loopback, link-local, private (RFC 1918, ULA, CGNAT) or the portal's own addresses.",
        see: 'webhooks.md#server-side-request-forgery-guard',
      }),
      timeout: isoDuration
        .default('PT10S')
        .describe('A webhook attempt without an answer within this time (PT1S–PT1M) failed.'),
      retryFor: isoDuration.default('P3D').meta({
        description:
          'A failing delivery is tried again, ever less often, this long after its event (at least `P1D`), then given up.',
        see: 'webhooks.md#delivery-an-outbox-at-least-once',
      }),
      deliveryLogRetention: isoDuration
        .default('P30D')
        .describe(
          'Finished deliveries (and their attempts) older than this are deleted by the daily housekeeping (at least `P1D`).',
        ),
    })
    .prefault({}),
  accounting: z
    .strictObject({
      radius: z
        .strictObject({
          servers: z
            .array(
              z.strictObject({
                address: z
                  .string()
                  .regex(
                    /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):\d{1,5}$/,
                    'must be HOST:PORT, e.g. radius.example.org:1813 or [2001:db8::1]:1813',
                  )
                  .describe('`HOST:PORT` of the accounting server (IPv6 in brackets; 1813 is the usual port).'),
                secretFile: z
                  .string()
                  .min(1)
                  .describe(
                    "The file holding the shared secret (mode 0600: a file others may read refuses the start), relative to the configuration file's folder.",
                  ),
                nasIdentifier: z
                  .string()
                  .min(1)
                  .max(253)
                  .optional()
                  .describe("The NAS-Identifier sent to this server; default: the node's `hostName`."),
              }),
            )
            .default([])
            .meta({
              description:
                'The RADIUS accounting servers; each gets every record (Start, Interim-Update, Stop of every session). Empty: no RADIUS accounting.',
              see: 'radius-accounting.md',
            }),
          interimInterval: isoDuration
            .default('PT10M')
            .describe('An Interim-Update is sent this often while a session lasts (`PT1M` to `P1D`).'),
          maxAge: isoDuration.default('P1D').meta({
            description:
              'A record a server has not acknowledged this long after its event is dropped, with an audit row and a metric (`PT1H` to `P90D`).',
            see: 'radius-accounting.md#delivery-an-outbox-retransmitted-until-answered',
          }),
        })
        .prefault({}),
      syslog: z
        .strictObject({
          collectors: z.array(syslogCollectorSchema).default([]).meta({
            description:
              'Where an RFC 5424 message goes at every session start and stop (user, device, profile, node, tunnel and client addresses); empty: none. Best effort: each collector has a bounded queue, and what does not fit is dropped and counted.',
            see: 'accountability.md#syslog-for-siems-and-firewalls',
          }),
          enterpriseNumber: z
            .int()
            .min(1)
            .max(4_294_967_295)
            .default(32473)
            .describe(
              "The IANA Private Enterprise Number in the structured data's SD-ID (`vpnSession@N`): your organisation's own, if it has one; the default is RFC 5612's number for documentation.",
            ),
        })
        .prefault({}),
    })
    .prefault({})
    .meta({
      description: 'Telling accounting systems and firewalls who holds which address.',
      see: 'accountability.md',
    }),
  mdmInventory: z
    .strictObject({
      provider: z
        .enum(['intune', 'jamf', 'json'])
        .describe(
          '`intune` (Microsoft Graph managed devices), `jamf` (Jamf Pro computers and mobile devices) or `json` (a URL answering a JSON array of serials or ids).',
        ),
      tenantId: z.string().min(1).optional().describe('`intune`: the Azure AD (Entra ID) tenant id.'),
      clientId: z.string().min(1).optional().describe('`intune`, `jamf`: the API client (application) id.'),
      clientSecretFile: z
        .string()
        .min(1)
        .optional()
        .describe(
          "`intune`, `jamf`: the file holding the client secret (mode 0600), relative to the configuration file's folder.",
        ),
      url: z
        .url({ protocol: /^https?$/ })
        .optional()
        .describe('`jamf`: the Jamf Pro instance (`https://example.jamfcloud.com`); `json`: the inventory URL.'),
      headers: z
        .record(z.string().regex(/^[A-Za-z0-9-]+$/), z.string())
        .optional()
        .describe('`json`: request headers sent with it (e.g. `Authorization`); never logged.'),
      tokenUrl: z
        .url({ protocol: /^https?$/ })
        .optional()
        .describe(
          '`intune`: the OAuth 2.0 token endpoint instead of `https://login.microsoftonline.com/<tenantId>/oauth2/v2.0/token` (national clouds).',
        ),
      graphUrl: z
        .url({ protocol: /^https?$/ })
        .optional()
        .describe('`intune`: Microsoft Graph instead of `https://graph.microsoft.com/v1.0` (national clouds).'),
      matches: z
        .enum(['serial', 'mdm_id'])
        .optional()
        .describe(
          "Whether a device's `serial` or `mdm_id` is looked for in the inventory; default: `enrollment.clientCertificate.deviceId.matches`, else `serial`.",
        ),
      interval: isoDuration.default('PT15M').describe('How often the inventory is read and compared (PT1S to P1D).'),
      maxRetirePerPass: z
        .union([z.int().min(1), z.string().regex(/^\d{1,3}(\.\d+)?%$/, 'a count, or a percentage such as "5%"')])
        .default('5%')
        .describe(
          'A pass that would retire more devices than this (a count, or a percentage of the live devices; at least 1) retires none.',
        ),
      compliance: z
        .strictObject({
          undetermined: z
            .enum(['keep', 'suspend'])
            .default('keep')
            .describe(
              '`intune`: what a device whose `complianceState` is `unknown`, `conflict`, `error` or any other value (or `inGracePeriod` without an end) gets: `keep` leaves it as it is, `suspend` suspends it as `noncompliant`.',
            ),
          staleAfter: isoDuration
            .nullable()
            .default(null)
            .describe(
              '`intune`: a device whose last check-in (`lastSyncDateTime`) is older than this (e.g. `P30D`) is suspended as `stale`; `null`: not done.',
            ),
          maxSuspendPerPass: z
            .union([z.int().min(1), z.string().regex(/^\d{1,3}(\.\d+)?%$/, 'a count, or a percentage such as "5%"')])
            .default('5%')
            .describe(
              'A pass that would suspend more devices than this (a count, or a percentage of the live devices; at least 1) suspends none.',
            ),
        })
        .nullable()
        .default(null)
        .meta({
          description:
            "`intune`, `json`: devices follow the MDM's compliance — a noncompliant device is suspended, and resumed once compliant; `null`: not done.",
          see: 'mdm.md#compliance',
        }),
    })
    .nullable()
    .default(null)
    .meta({
      description:
        "Devices that leave the MDM are retired, by comparing the registered devices with the MDM's inventory; `null`: not done.",
      see: 'mdm.md#inventory-sync',
    }),
  mdmPush: z
    .strictObject({
      jamf: z
        .strictObject({
          allowedGroups: z
            .array(z.union([z.int().min(1), z.string().min(1).max(255), jamfGroupOfKind]))
            .min(1)
            .meta({
              description:
                'The smart groups whose members may use the VPN: `{"kind": "computer" | "mobileDevice", "id": N}` or `{"kind": …, "name": "…"}`; a bare id (a number) or name (a string) stands for a group of either kind. A device leaving one is suspended (reason `jamf-group`), one joining it is resumed (only from that suspension).',
              see: 'mdm.md#jamf-pro-push',
            }),
          basicAuth: z
            .strictObject({
              username: z.string().min(1).max(255).describe('The user name the webhook sends.'),
              passwordFile: z
                .string()
                .min(1)
                .describe(
                  "The file holding the webhook's password (mode 0600: a file others may read refuses the start), relative to the configuration file's folder.",
                ),
            })
            .optional()
            .describe("The webhook's Basic authentication, as Jamf Pro sends it."),
          headerAuth: z
            .strictObject({
              name: z
                .string()
                .regex(/^[A-Za-z0-9-]+$/, 'a header name: letters, digits and dashes')
                .describe('The header Jamf Pro sends (e.g. `X-Jamf-Secret`).'),
              valueFile: z
                .string()
                .min(1)
                .describe(
                  "The file holding the header's value (mode 0600: a file others may read refuses the start), relative to the configuration file's folder.",
                ),
            })
            .optional()
            .describe("The webhook's header authentication, as Jamf Pro sends it."),
          allowList: z
            .array(cidr)
            .default(['0.0.0.0/0', '::/0'])
            .describe('Source addresses (CIDR) that may deliver events; others get 403 before their body is read.'),
        })
        .nullable()
        .default(null)
        .meta({
          description:
            "Jamf Pro's webhooks at `{baseUrl}mdm/jamf`: smart group membership suspends and resumes devices within seconds; `null`: not served. One of `basicAuth` and `headerAuth` is required.",
          see: 'mdm.md#jamf-pro-push',
        }),
    })
    .prefault({}),
  reconcileInterval: isoDuration.default('PT1M').meta({
    description:
      "How often every node's peers are made equal to the database (at least 1 s); each such full pass also observes WireGuard sessions and notes live statistics.",
    see: 'nodes.md',
  }),
  connectionLogRetention: isoDuration.default('P1M').meta({
    description:
      "Closed connection history older than this is deleted by the daily housekeeping (the reference's default), except a legal hold's.",
    see: 'accountability.md#retention-and-legal-hold',
  }),
  originatingIpRetention: isoDuration.default('P7D').meta({
    description:
      "Where `Log.originatingIp` keeps the client's own address (`originating_ip`) past the session, the daily housekeeping blanks it in closed history older than this; the rows stay until `connectionLogRetention`. A legal hold's rows keep it.",
    see: 'accountability.md#retention-and-legal-hold',
  }),
  lookups: z
    .strictObject({
      requireReason: z
        .strictObject({
          attribution: z.boolean().default(true).describe('`GET /attribution` without a `reason` answers 400.'),
          connectionLog: z
            .boolean()
            .default(false)
            .describe(
              '`GET /connection_log` with `ip` but without a `reason` answers 400 (off by default, so that existing clients keep working).',
            ),
        })
        .prefault({})
        .meta({
          description:
            'Look-ups of people by address must say why: the reason is kept in the audit row of the look-up.',
          see: 'accountability.md#answering-an-abuse-report',
        }),
    })
    .prefault({}),
  connectScriptPath: z.string().min(1).optional().meta({
    description:
      "A program run at every connect and disconnect with the `VPN_*` variables the reference's connect script gets; its non-zero exit refuses an OpenVPN client. At most 16 copies run at once, and one at a time per configuration and per address; the others wait their turn, in order. A relative path is taken from the configuration file's folder. Unset: none.",
    see: 'sessions-and-statistics.md',
  }),
  connectScriptTimeout: isoDuration
    .default('PT10S')
    .describe(
      'A connect script still running after this (PT1S–PT1M) is killed, with the processes it started; an OpenVPN client waiting for it is refused. For an OpenVPN connect it counts from when the script was asked for, time spent waiting for a place included; a disconnect gets it all once its script starts.',
    ),
  Log: z
    .strictObject({
      syslogConnectionEvents: z
        .boolean()
        .default(false)
        .describe(
          "Write the reference's `CONNECT …`/`DISCONNECT …` lines to the portal's log (journald under systemd).",
        ),
      originatingIp: z
        .boolean()
        .default(false)
        .describe(
          "Include the client's address in those lines (else `*`), and keep it in the history past the session, until `originatingIpRetention` (else it is blanked when the session closes, unless a legal hold keeps the user's records).",
        ),
    })
    .prefault({}),
  databaseTimeout: isoDuration.default('PT5S').meta({
    description:
      "The longest a call waits for the database (`PT1S` to `PT1H`): for a connection, for a lock another process or session holds (SQLite's busy timeout, PostgreSQL's `lock_timeout`), and on PostgreSQL for the answer to one statement. Then the call answers 503.",
    see: 'operations.md#database-files-and-outages',
  }),
  databaseRetryFor: isoDuration.default('PT5S').meta({
    description:
      "PostgreSQL: how long an outage (a lost database connection) is made good before a call answers 503 (`PT0S`, never, to `PT1M`): a restart, a failover or a dropped connection; a call rides out up to three outages, each within this. A connection the server refuses is asked for again; a change whose connection broke before its COMMIT was sent is run again on a fresh one; a COMMIT whose answer was lost is resolved by reading back the change's marker, never by guessing. SQLite ignores it.",
    see: 'postgresql.md#restarts-and-failovers',
  }),
  databasePoolSize: z
    .int()
    .min(2)
    .max(100)
    .default(10)
    .describe(
      "PostgreSQL connections each portal instance keeps (at least 2: the reconcile pass holds one for its lock while it reads and writes on another); a burst larger than this waits for a free connection (up to `databaseTimeout`). PostgreSQL's `max_connections` (default 100) must hold every instance's pool plus the `db` commands'. SQLite ignores it.",
    ),
  databasePreparedStatements: z.boolean().default(true).meta({
    description:
      'PostgreSQL: the statements each portal instance runs again and again are prepared once on each connection (at most 200 a connection), so the server does not parse and plan them for every call; a create then costs the server half the CPU. Turn it off behind a connection pooler that does not keep prepared statements (PgBouncer in transaction mode before 1.21, or without `max_prepared_statements`). SQLite ignores it.',
    see: 'postgresql.md#prepared-statements',
  }),
  auditLogRetention: isoDuration.default('P1Y').meta({
    description:
      'Audit log entries (and finished revocation receipts, and ended legal holds) older than this are deleted by the daily housekeeping, except those about a user under a legal hold.',
    see: 'accountability.md#retention-and-legal-hold',
  }),
  revocationDeadline: isoDuration.default('PT30S').meta({
    description:
      'A revocation receipt still pending this long after its call is overdue (`PT1S` to `PT1H`): `revocation.overdue` is announced and the receipt says `overdue` until every node confirmed.',
    see: 'revocation-receipts.md',
  }),
  logLevel: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe(
      'The pino level. Start (`admin API at …`, `metrics at …`) and stop (`stopping the portal`, `portal stopped`) are logged at info; one line per request (`request answered`, method, URL, status, time) only at debug, the URL without the values of sign-in secrets (`code`, `state`, `session_state`, `id_token`, `access_token`, `token` show as `***`: the console’s OpenID callback carries a one-time code; so does `enrollment_token`, a device’s secret).',
    ),
  sessionExpiry: isoDuration
    .default('P90D')
    .describe("The lifetime of a new configuration (calendar units as PHP's DateInterval)."),
  expiryWarning: isoDuration.default('P7D').meta({
    description: '`configuration.expiring` is announced this long before a configuration expires.',
    see: 'enrollment-and-devices.md#renewal-extend-and-configurationexpiring',
  }),
  caExpiry: isoDuration
    .default('P25Y')
    .describe(
      "The lifetime of the OpenVPN CA that `generate-secrets` makes (the reference's default for new installations); no configuration expires after the CA.",
    ),
  supportedSessionExpiry: z
    .array(isoDuration)
    .default([])
    .describe("Further values `create`'s `expires_in` may take; `sessionExpiry` is always allowed."),
  WireGuard: wireGuardSchema.prefault({}),
  apple: z
    .strictObject({
      signingCertificate: z
        .string()
        .min(1)
        .optional()
        .describe(
          "PEM file of the certificate that signs Apple profiles (a relative path is taken from the configuration file's folder); with `signingKey`, every Apple profile is a CMS SignedData.",
        ),
      signingKey: z.string().min(1).optional().describe('PEM file of the private key of `signingCertificate` (0600).'),
      signingChain: z
        .string()
        .min(1)
        .optional()
        .describe('PEM file of the certificates between the signing certificate and a root the devices trust.'),
    })
    .prefault({})
    .meta({ description: 'Signed Apple profiles.', see: 'apple-profiles.md' }),
  ProfileList: z.array(profileSchema).min(1).describe('The VPN profiles.'),
});

export type PortalConfigFile = z.input<typeof portalConfigSchema>;
export type ParsedPortalConfig = z.output<typeof portalConfigSchema>;
export type ParsedProfile = z.output<typeof profileSchema>;
export type ProfileConfigFile = z.input<typeof profileSchema>;
