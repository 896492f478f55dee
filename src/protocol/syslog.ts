// Syslog as SIEMs and firewalls receive it: RFC 5424 messages (header, structured data, text),
// RFC 6587 octet counting for TCP and TLS (RFC 5425), and the session messages the portal sends
// at every session start and stop, whose one-line text a firewall parses with SESSION_TEXT_PATTERN.
// Pure: the sending is the syslog collector's, in core.
//
// The text (MSG) is plain ASCII without a BOM, not UTF-8 with one: firewalls' parsers (Palo Alto
// User-ID, FortiGate) match it with a regular expression and some take the BOM for part of the
// text, while ASCII reads the same everywhere. A value that is not printable ASCII is
// percent-encoded there (`j%C3%BCrgen`); the structured data carries every value in UTF-8, as
// RFC 5424 has it, only `%`, control characters and line separators percent-encoded.

import type { SyslogFacilityName } from '../config/syslog-facilities.js';

/** RFC 5424 §6.2.1 facilities by their usual names. */
export const SYSLOG_FACILITIES = {
  kern: 0,
  user: 1,
  mail: 2,
  daemon: 3,
  auth: 4,
  syslog: 5,
  lpr: 6,
  news: 7,
  uucp: 8,
  cron: 9,
  authpriv: 10,
  ftp: 11,
  ntp: 12,
  audit: 13,
  alert: 14,
  clock: 15,
  local0: 16,
  local1: 17,
  local2: 18,
  local3: 19,
  local4: 20,
  local5: 21,
  local6: 22,
  local7: 23,
} as const satisfies Record<SyslogFacilityName, number>;

export type SyslogFacility = keyof typeof SYSLOG_FACILITIES;

export const SYSLOG_SEVERITIES = {
  emergency: 0,
  alert: 1,
  critical: 2,
  error: 3,
  warning: 4,
  notice: 5,
  informational: 6,
  debug: 7,
} as const;

export type SyslogSeverity = keyof typeof SYSLOG_SEVERITIES;

/** RFC 5424's PRINTUSASCII (%d33-126), the characters of HOSTNAME, APP-NAME, PROCID and MSGID. */
const PRINTUSASCII = /^[\x21-\x7e]+$/;

/** Whether `text` may be a header field of at most `max` characters (RFC 5424 §6.2). */
export function isHeaderField(text: string, max: number): boolean {
  return text.length <= max && PRINTUSASCII.test(text);
}

/** The longest HOSTNAME and APP-NAME RFC 5424 allows. */
export const MAX_HOSTNAME = 255;
export const MAX_APP_NAME = 48;

export interface SyslogHeader {
  readonly facility: SyslogFacility;
  readonly severity: SyslogSeverity;
  readonly timestamp: Date;
  /** PRINTUSASCII, at most 255 characters; null: NILVALUE. */
  readonly hostname: string | null;
  /** PRINTUSASCII, at most 48 characters; null: NILVALUE. */
  readonly appName: string | null;
  /** PRINTUSASCII, at most 128 characters; null: NILVALUE. */
  readonly procId: string | null;
  /** PRINTUSASCII, at most 32 characters; null: NILVALUE. */
  readonly msgId: string | null;
}

/** One SD-ELEMENT: its SD-ID and its parameters in order (RFC 5424 §6.3). */
export interface StructuredDataElement {
  readonly id: string;
  readonly params: readonly (readonly [name: string, value: string])[];
}

/** SD-NAME: PRINTUSASCII except `=`, space, `]` and `"`, 1 to 32 characters. */
const SD_NAME = /^[\x21-\x7e]{1,32}$/;

function checkSdName(name: string, what: string): void {
  if (!SD_NAME.test(name) || /[= \]"]/.test(name)) throw new RangeError(`${what} "${name}" is not an RFC 5424 SD-NAME`);
}

/** What a parameter value percent-encodes: `%` itself, control characters (C0, DEL, C1) and the Unicode line and paragraph separators. */
const PERCENT_ENCODED_IN_VALUES = /[%\p{Cc}\u2028\u2029]/gu;

/**
 * A PARAM-VALUE: `"`, `\` and `]` must be escaped with a backslash (RFC 5424 §6.3.3); the rest is
 * UTF-8 as it is, except control characters and line separators, percent-encoded as the text has
 * them (`%0A`): a line break in a user id would otherwise begin a forged second record for every
 * receiver that splits on lines (a UDP input, a log file a SIEM reads line by line). `%` is
 * encoded too (`%25`), in the same pass, so the encoding is undone exactly: an id `a%0Ab` is
 * `a%250Ab`, never the `a%0Ab` of an id with a line break. The two steps do not touch each
 * other's characters, so a receiver undoes the backslashes, then the percent-encoding.
 */
export function escapeParamValue(value: string): string {
  return value
    .replace(/["\\\]]/g, (character) => `\\${character}`)
    .replace(PERCENT_ENCODED_IN_VALUES, (character) => percentEncoded(character));
}

/** Each UTF-8 byte of `value` as `%XX`. */
function percentEncoded(value: string): string {
  return [...Buffer.from(value, 'utf8')].map(percentByte).join('');
}

function percentByte(byte: number): string {
  return `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
}

/**
 * One RFC 5424 message: `<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA MSG`.
 * `text` must be printable ASCII (it is sent without a BOM); an empty text is left out.
 */
export function formatSyslogMessage(
  header: SyslogHeader,
  elements: readonly StructuredDataElement[],
  text: string,
): string {
  const priority = SYSLOG_FACILITIES[header.facility] * 8 + SYSLOG_SEVERITIES[header.severity];
  const fields = [
    `<${priority}>1`,
    header.timestamp.toISOString(),
    headerField(header.hostname, MAX_HOSTNAME, 'HOSTNAME'),
    headerField(header.appName, MAX_APP_NAME, 'APP-NAME'),
    headerField(header.procId, 128, 'PROCID'),
    headerField(header.msgId, 32, 'MSGID'),
    elements.length === 0 ? '-' : elements.map(formatElement).join(''),
  ];
  if (!/^[\x20-\x7e]*$/.test(text)) throw new RangeError('the syslog text must be printable ASCII');
  return text === '' ? fields.join(' ') : `${fields.join(' ')} ${text}`;
}

function headerField(value: string | null, max: number, name: string): string {
  if (value === null) return '-';
  if (!isHeaderField(value, max)) throw new RangeError(`${name} "${value}" is not 1–${max} printable ASCII characters`);
  return value;
}

function formatElement(element: StructuredDataElement): string {
  checkSdName(element.id.replace(/@\d+(\.\d+)*$/, ''), 'SD-ID');
  const params = element.params.map(([name, value]) => {
    checkSdName(name, 'PARAM-NAME');
    return ` ${name}="${escapeParamValue(value)}"`;
  });
  return `[${element.id}${params.join('')}]`;
}

/** How messages are delimited on a TCP or TLS stream (RFC 6587 §3.4). */
export type SyslogFraming = 'octet-counting' | 'newline';

/** RFC 6587 §3.4.1 octet counting, as RFC 5425 also frames TLS: `MSG-LEN SP SYSLOG-MSG`. */
export function octetCounted(message: string): Buffer {
  const bytes = Buffer.from(message, 'utf8');
  return Buffer.concat([Buffer.from(`${bytes.length} `, 'ascii'), bytes]);
}

/**
 * RFC 6587 §3.4.2 non-transparent framing: the message and a line feed, for receivers that read
 * one message a line (Palo Alto's User-ID listener). Values are percent-encoded before they get
 * here, so no line break is left to end the message early; one that slipped through would become
 * a space rather than a forged record.
 */
export function newlineFramed(message: string): Buffer {
  return Buffer.from(`${message.replace(/[\r\n]/g, ' ')}\n`, 'utf8');
}

/** One message framed for a stream. */
export function framed(message: string, framing: SyslogFraming): Buffer {
  return framing === 'newline' ? newlineFramed(message) : octetCounted(message);
}

/** What a session message says: a session started or stopped, whose, where, with which addresses. */
export interface SessionRecord {
  readonly event: 'start' | 'stop';
  readonly userId: string;
  /** The device the configuration was issued to; null: none, or no longer known. */
  readonly deviceId: string | null;
  readonly profileId: string;
  readonly nodeNumber: number;
  readonly vpnProto: string;
  /** A WireGuard public key or an OpenVPN certificate's Common Name. */
  readonly connectionId: string;
  /** Tunnel addresses; empty when the profile has none of that family. */
  readonly ipFour: string;
  readonly ipSix: string;
  /** The client's own (public) address as the node saw it; null: not known. */
  readonly clientAddress: string | null;
  /** A stop's traffic, in bytes, as the node counted it. */
  readonly bytes?: { readonly in: number; readonly out: number };
  /** Where the node translates the IPv4 tunnel address deterministically: its public address and ports; null: it does not. */
  readonly nat: NatShare | null;
}

/** A client's share of a deterministic NAT: one public address, ports `firstPort`–`lastPort`. */
export interface NatShare {
  readonly publicAddress: string;
  readonly firstPort: number;
  readonly lastPort: number;
}

/** The message text's hard bound: a firewall's parser reads no further. */
export const MAX_SESSION_TEXT_BYTES = 2048;

/** Longest value the text carries of a field, encoded: the structured data has the whole. */
const MAX_TEXT_VALUE = 255;
const MAX_TEXT_ADDRESS = 64;

/**
 * The session text, one line, fields always in this order and always present (`-`: none):
 * `vpn session start user=alice device=- profile=staff node=0 protocol=wireguard ipv4=10.60.0.2
 * ipv6=fd60::2 client=198.51.100.7 connection=KEY public=203.0.113.1 ports=1024-3023` (`public=-
 * ports=-` where the node does no deterministic NAT). Bytes outside printable ASCII, spaces and
 * `%` are percent-encoded (so is a value that is just `-`); a value is cut at 255 encoded bytes
 * (an address at 64) between whole characters, so the line stays under MAX_SESSION_TEXT_BYTES whatever it holds.
 */
export function sessionText(record: SessionRecord): string {
  const fields: [string, string | null, number][] = [
    ['user', record.userId, MAX_TEXT_VALUE],
    ['device', record.deviceId, MAX_TEXT_VALUE],
    ['profile', record.profileId, MAX_TEXT_VALUE],
    ['node', String(record.nodeNumber), MAX_TEXT_VALUE],
    ['protocol', record.vpnProto, MAX_TEXT_VALUE],
    ['ipv4', record.ipFour, MAX_TEXT_ADDRESS],
    ['ipv6', record.ipSix, MAX_TEXT_ADDRESS],
    ['client', record.clientAddress, MAX_TEXT_ADDRESS],
    ['connection', record.connectionId, MAX_TEXT_VALUE],
    ['public', record.nat?.publicAddress ?? null, MAX_TEXT_ADDRESS],
    ['ports', record.nat === null ? null : `${record.nat.firstPort}-${record.nat.lastPort}`, MAX_TEXT_VALUE],
  ];
  const text = `vpn session ${record.event}${fields.map(([name, value, max]) => ` ${name}=${textValue(value, max)}`).join('')}`;
  if (Buffer.byteLength(text) > MAX_SESSION_TEXT_BYTES) throw new RangeError('session text longer than its bound');
  return text;
}

/**
 * Parses a session text: the one regular expression docs/accountability.md gives firewalls,
 * written with what every regular expression dialect reads (no `\S`, no `\d`).
 * Groups: 1 event (start|stop), 2 user, 3 device, 4 profile, 5 node, 6 protocol, 7 ipv4, 8 ipv6,
 * 9 client, 10 connection, 11 public address, 12 port block (`first-last`).
 */
export const SESSION_TEXT_PATTERN =
  /vpn session (start|stop) user=([^ ]+) device=([^ ]+) profile=([^ ]+) node=([0-9]+) protocol=([^ ]+) ipv4=([^ ]+) ipv6=([^ ]+) client=([^ ]+) connection=([^ ]+) public=([^ ]+) ports=([^ ]+)$/;

/**
 * A text field's value: encoded, and cut at `max` encoded bytes between whole characters (code
 * points), never inside one, so a value cut short still decodes (`%C3` alone, half a `ü`, does
 * not), as RADIUS cuts its text attributes.
 */
function textValue(value: string | null, max: number): string {
  if (value === null || value === '') return '-';
  if (value === '-') return '%2D';
  let encoded = '';
  for (const character of value) {
    const piece = /^[\x21-\x24\x26-\x7e]$/.test(character) ? character : percentEncoded(character);
    if (encoded.length + piece.length > max) break;
    encoded += piece;
  }
  return encoded;
}

/** The SD-ID of the session element: `vpnSession@` the operator's IANA Private Enterprise Number. */
export function sessionElementId(enterpriseNumber: number): string {
  return `vpnSession@${enterpriseNumber}`;
}

/**
 * The structured data of a session: every value whole, named as the Admin API and the webhooks
 * name them; absent ones (device, client) left out. No name ends in a text field's name (`user=`
 * is in the text, `user_id=` here), so a per-field expression such as `ipv4=([^ ]+)` cannot
 * match a parameter.
 */
export function sessionElement(record: SessionRecord, enterpriseNumber: number): StructuredDataElement {
  const params: [string, string][] = [
    ['event', record.event],
    ['user_id', record.userId],
    ...(record.deviceId === null ? [] : [['device_id', record.deviceId] as [string, string]]),
    ['profile_id', record.profileId],
    ['node_number', String(record.nodeNumber)],
    ['vpn_proto', record.vpnProto],
    ['connection_id', record.connectionId],
    ['ip_four', record.ipFour],
    ['ip_six', record.ipSix],
    ...(record.clientAddress === null ? [] : [['originating_ip', record.clientAddress] as [string, string]]),
    ...(record.bytes === undefined
      ? []
      : [
          ['bytes_in', String(record.bytes.in)] as [string, string],
          ['bytes_out', String(record.bytes.out)] as [string, string],
        ]),
    ...(record.nat === null
      ? []
      : [
          ['nat_public_ip', record.nat.publicAddress] as [string, string],
          ['nat_port_first', String(record.nat.firstPort)] as [string, string],
          ['nat_port_last', String(record.nat.lastPort)] as [string, string],
        ]),
  ];
  return { id: sessionElementId(enterpriseNumber), params };
}

/** Who sends: the header fields a collector's configuration chooses. */
export interface SyslogOrigin {
  readonly facility: SyslogFacility;
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly enterpriseNumber: number;
  /** false: the message has no structured data (`-`), only the text, for receivers that parse the text alone. */
  readonly structuredData: boolean;
}

/** The whole message of a session start (MSGID `SESSION_START`) or stop (`SESSION_STOP`), at `at`. */
export function sessionMessage(record: SessionRecord, origin: SyslogOrigin, at: Date): string {
  return formatSyslogMessage(
    {
      facility: origin.facility,
      severity: 'informational',
      timestamp: at,
      hostname: origin.hostname,
      appName: origin.appName,
      procId: origin.procId,
      msgId: record.event === 'start' ? 'SESSION_START' : 'SESSION_STOP',
    },
    origin.structuredData ? [sessionElement(record, origin.enterpriseNumber)] : [],
    sessionText(record),
  );
}

/** What a NAT mapping change message says: the node's mapping from `appliedAt` on. */
export interface NatChangeRecord {
  readonly nodeNumber: number;
  readonly mode: 'none' | 'masquerade' | 'deterministic';
  /** Deterministic only; empty otherwise. */
  readonly publicAddresses: readonly string[];
  /** Deterministic only; null otherwise. */
  readonly portsPerClient: number | null;
  readonly appliedAt: Date;
}

/** How much of the text the public addresses may take; the structured data lists them all. */
const MAX_TEXT_PUBLIC_ADDRESSES = 1536;

/**
 * The NAT change text, one line, fields always in this order and always present (`-`: none):
 * `vpn nat change node=0 mode=deterministic public=203.0.113.1,203.0.113.2 ports_per_client=2000
 * applied=2026-11-29T04:00:00.000Z`. The addresses are comma-separated; when they do not fit in
 * 1,536 bytes the list ends in `,+N` (N addresses more, in the structured data).
 */
export function natChangeText(record: NatChangeRecord): string {
  let addresses = '';
  for (const [index, address] of record.publicAddresses.entries()) {
    const next = addresses === '' ? address : `${addresses},${address}`;
    if (next.length > MAX_TEXT_PUBLIC_ADDRESSES) {
      addresses += `,+${record.publicAddresses.length - index}`;
      break;
    }
    addresses = next;
  }
  const text =
    `vpn nat change node=${record.nodeNumber} mode=${record.mode} public=${addresses === '' ? '-' : addresses}` +
    ` ports_per_client=${record.portsPerClient ?? '-'} applied=${record.appliedAt.toISOString()}`;
  if (Buffer.byteLength(text) > MAX_SESSION_TEXT_BYTES) throw new RangeError('NAT change text longer than its bound');
  return text;
}

/**
 * Parses a NAT change text (the second expression of docs/accountability.md).
 * Groups: 1 node, 2 mode, 3 public addresses, 4 ports per client, 5 applied at.
 */
export const NAT_CHANGE_TEXT_PATTERN =
  /vpn nat change node=([0-9]+) mode=(none|masquerade|deterministic) public=([^ ]+) ports_per_client=([^ ]+) applied=([^ ]+)$/;

/** The SD-ID of the NAT change element: `vpnNat@` the operator's IANA Private Enterprise Number. */
export function natChangeElementId(enterpriseNumber: number): string {
  return `vpnNat@${enterpriseNumber}`;
}

/** The structured data of a NAT change: the addresses whole, comma-separated; absent ones left out. */
export function natChangeElement(record: NatChangeRecord, enterpriseNumber: number): StructuredDataElement {
  const params: [string, string][] = [
    ['node_number', String(record.nodeNumber)],
    ['mode', record.mode],
    ...(record.publicAddresses.length === 0
      ? []
      : [['public_addresses', record.publicAddresses.join(',')] as [string, string]]),
    ...(record.portsPerClient === null
      ? []
      : [['ports_per_client', String(record.portsPerClient)] as [string, string]]),
    ['applied_at', record.appliedAt.toISOString()],
  ];
  return { id: natChangeElementId(enterpriseNumber), params };
}

/** The whole message of a NAT mapping change (MSGID `NAT_CHANGE`), at `at`. */
export function natChangeMessage(record: NatChangeRecord, origin: SyslogOrigin, at: Date): string {
  return formatSyslogMessage(
    {
      facility: origin.facility,
      severity: 'notice',
      timestamp: at,
      hostname: origin.hostname,
      appName: origin.appName,
      procId: origin.procId,
      msgId: 'NAT_CHANGE',
    },
    origin.structuredData ? [natChangeElement(record, origin.enterpriseNumber)] : [],
    natChangeText(record),
  );
}
