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
import { ipAddressFamily, parseIpAddress } from '../net/ip-prefix.js';

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

/**
 * The bound of a whole message, every kind, in UTF-8 bytes: under rsyslog's default
 * `maxMessageSize` (8 KiB), the smallest of the usual collectors' (syslog-ng's is 64 KiB), which
 * cut a longer message short, its text's end first.
 */
export const MAX_MESSAGE_BYTES = 8000;

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

/**
 * The whole message of a session start (MSGID `SESSION_START`) or stop (`SESSION_STOP`), at `at`,
 * at most MAX_MESSAGE_BYTES: usual values make 500–700 bytes, and the header and the text stay
 * well under the bound whatever they hold; the structured data has every value whole unless the
 * whole would pass it (hundreds of characters each percent-encoded, a profile id of thousands),
 * when the longest value is cut to half its characters, between whole ones, until it fits.
 */
export function sessionMessage(record: SessionRecord, origin: SyslogOrigin, at: Date): string {
  const header: SyslogHeader = {
    facility: origin.facility,
    severity: 'informational',
    timestamp: at,
    hostname: origin.hostname,
    appName: origin.appName,
    procId: origin.procId,
    msgId: record.event === 'start' ? 'SESSION_START' : 'SESSION_STOP',
  };
  const text = sessionText(record);
  if (!origin.structuredData) return formatSyslogMessage(header, [], text);
  const { id, params: whole } = sessionElement(record, origin.enterpriseNumber);
  let params = whole;
  for (;;) {
    const message = formatSyslogMessage(header, [{ id, params }], text);
    if (Buffer.byteLength(message) <= MAX_MESSAGE_BYTES) return message;
    const longest = params.reduce(
      (found, [, value], index) =>
        Buffer.byteLength(escapeParamValue(value)) > Buffer.byteLength(escapeParamValue(params[found]?.[1] ?? ''))
          ? index
          : found,
      0,
    );
    const [name, value] = params[longest] as readonly [string, string];
    const characters = [...value];
    params = params.map((param, index) =>
      index === longest ? ([name, characters.slice(0, Math.floor(characters.length / 2)).join('')] as const) : param,
    );
  }
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

/** How much of a message's text its public addresses may take; the structured data lists the same. */
const MAX_TEXT_PUBLIC_ADDRESSES = 1536;

/**
 * The public addresses compactly, in numeric order as the mapping takes them: IPv4 addresses in
 * runs of three or more consecutive ones as `first-last` (a pool of 1,024 in one block is one
 * range), others one by one; IPv6 addresses, which deterministic NAT does not take, after them
 * as given.
 */
export function publicAddressRanges(addresses: readonly string[]): string[] {
  const four = [...new Set(addresses.filter((address) => ipAddressFamily(address) === 4))]
    .map((address) => parseIpAddress(address).value)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const ranges: string[] = [];
  for (let first = 0; first < four.length; ) {
    let last = first;
    while (last + 1 < four.length && four[last + 1] === (four[last] as bigint) + 1n) last++;
    const name = (index: number) => ipv4Text(four[index] as bigint);
    if (last - first >= 2) ranges.push(`${name(first)}-${name(last)}`);
    else for (let index = first; index <= last; index++) ranges.push(name(index));
    first = last + 1;
  }
  return [...ranges, ...addresses.filter((address) => ipAddressFamily(address) !== 4)];
}

function ipv4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join('.');
}

/** One NAT change message's share of the public addresses: its ranges, and which part of how many it is. */
export interface NatChangePart {
  readonly ranges: readonly string[];
  /** From 1. */
  readonly part: number;
  readonly parts: number;
}

/**
 * The parts a NAT change is sent in: its address ranges, comma-separated, in pieces of at most
 * 1,536 bytes, in order, so that each message lists all of its share in the text and the
 * structured data alike and stays under MAX_MESSAGE_BYTES. A usual pool (one block, or a few
 * addresses) is one part; 1,024 addresses that make no run at all, eleven.
 */
export function natChangeParts(record: NatChangeRecord): NatChangePart[] {
  const pieces: string[][] = [[]];
  let length = 0;
  for (const range of publicAddressRanges(record.publicAddresses)) {
    const piece = pieces[pieces.length - 1] as string[];
    const added = piece.length === 0 ? range.length : range.length + 1;
    if (piece.length > 0 && length + added > MAX_TEXT_PUBLIC_ADDRESSES) {
      pieces.push([range]);
      length = range.length;
    } else {
      piece.push(range);
      length += added;
    }
  }
  return pieces.map((ranges, index) => ({ ranges, part: index + 1, parts: pieces.length }));
}

/**
 * The NAT change text of one part, one line, fields always in this order and always present
 * (`-`: none): `vpn nat change node=0 mode=deterministic public=203.0.113.1,203.0.113.8-203.0.113.15
 * ports_per_client=2000 applied=2026-11-29T04:00:00.000Z part=1/1`. The part's address ranges are
 * comma-separated.
 */
export function natChangeText(record: NatChangeRecord, part: NatChangePart = onlyPart(record)): string {
  const addresses = part.ranges.join(',');
  const text =
    `vpn nat change node=${record.nodeNumber} mode=${record.mode} public=${addresses === '' ? '-' : addresses}` +
    ` ports_per_client=${record.portsPerClient ?? '-'} applied=${record.appliedAt.toISOString()}` +
    ` part=${part.part}/${part.parts}`;
  if (Buffer.byteLength(text) > MAX_SESSION_TEXT_BYTES) throw new RangeError('NAT change text longer than its bound');
  return text;
}

/** The first part of a change: the whole of one that needs only one. */
function onlyPart(record: NatChangeRecord): NatChangePart {
  return natChangeParts(record)[0] as NatChangePart;
}

/**
 * Parses a NAT change text (the second expression of docs/accountability.md).
 * Groups: 1 node, 2 mode, 3 public addresses, 4 ports per client, 5 applied at, 6 part, 7 parts.
 */
export const NAT_CHANGE_TEXT_PATTERN =
  /vpn nat change node=([0-9]+) mode=(none|masquerade|deterministic) public=([^ ]+) ports_per_client=([^ ]+) applied=([^ ]+) part=([0-9]+)\/([0-9]+)$/;

/** The SD-ID of the NAT change element: `vpnNat@` the operator's IANA Private Enterprise Number. */
export function natChangeElementId(enterpriseNumber: number): string {
  return `vpnNat@${enterpriseNumber}`;
}

/** The structured data of one part of a NAT change: the part's address ranges, comma-separated; absent ones left out. */
export function natChangeElement(
  record: NatChangeRecord,
  enterpriseNumber: number,
  part: NatChangePart = onlyPart(record),
): StructuredDataElement {
  const params: [string, string][] = [
    ['node_number', String(record.nodeNumber)],
    ['mode', record.mode],
    ...(part.ranges.length === 0 ? [] : [['public_addresses', part.ranges.join(',')] as [string, string]]),
    ...(record.portsPerClient === null
      ? []
      : [['ports_per_client', String(record.portsPerClient)] as [string, string]]),
    ['applied_at', record.appliedAt.toISOString()],
    ['part', String(part.part)],
    ['parts', String(part.parts)],
  ];
  return { id: natChangeElementId(enterpriseNumber), params };
}

/**
 * The messages of a NAT mapping change (MSGID `NAT_CHANGE`), at `at`: one a part
 * (natChangeParts), in order, each at most MAX_MESSAGE_BYTES.
 */
export function natChangeMessages(record: NatChangeRecord, origin: SyslogOrigin, at: Date): string[] {
  return natChangeParts(record).map((part) => {
    const message = formatSyslogMessage(
      {
        facility: origin.facility,
        severity: 'notice',
        timestamp: at,
        hostname: origin.hostname,
        appName: origin.appName,
        procId: origin.procId,
        msgId: 'NAT_CHANGE',
      },
      origin.structuredData ? [natChangeElement(record, origin.enterpriseNumber, part)] : [],
      natChangeText(record, part),
    );
    if (Buffer.byteLength(message) > MAX_MESSAGE_BYTES)
      throw new RangeError('NAT change message longer than its bound');
    return message;
  });
}
