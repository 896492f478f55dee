// RADIUS accounting (RFC 2866, with the attributes of RFC 2869, 3162/6911 and 6929's Gigawords
// use): the Accounting-Request the portal sends for each session's Start, Interim-Update and
// Stop, and the check of the Accounting-Response that ends its retransmission. Pure: bytes in,
// bytes out; the sending (UDP, retransmission, the outbox) is the accounting worker's.
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { parseIpAddress } from '../net/ip-prefix.js';

export const RADIUS_CODE = { accountingRequest: 4, accountingResponse: 5 } as const;

/** The attribute types the portal sends (IANA "RADIUS Attribute Types"). */
export const ATTRIBUTE = {
  userName: 1,
  nasIpAddress: 4,
  framedIpAddress: 8,
  class: 25,
  callingStationId: 31,
  nasIdentifier: 32,
  acctStatusType: 40,
  acctDelayTime: 41,
  acctInputOctets: 42,
  acctOutputOctets: 43,
  acctSessionId: 44,
  acctSessionTime: 46,
  acctTerminateCause: 49,
  acctInputGigawords: 52,
  acctOutputGigawords: 53,
  eventTimestamp: 55,
  nasPortType: 61,
  nasIpv6Address: 95,
  framedIpv6Address: 168,
} as const;

export const ACCT_STATUS_TYPES = ['Start', 'Stop', 'Interim-Update'] as const;
export type AcctStatusType = (typeof ACCT_STATUS_TYPES)[number];
const STATUS_TYPE_VALUE: Record<AcctStatusType, number> = { Start: 1, Stop: 2, 'Interim-Update': 3 };

/** The Acct-Terminate-Cause values (RFC 2866 §5.10) a VPN session can end with. */
export const TERMINATE_CAUSES = {
  'User-Request': 1,
  'Lost-Carrier': 2,
  'Lost-Service': 3,
  'Idle-Timeout': 4,
  'Admin-Reset': 6,
  'NAS-Request': 10,
  'NAS-Reboot': 11,
} as const;
export type TerminateCause = keyof typeof TERMINATE_CAUSES;

/** NAS-Port-Type Virtual (RFC 2865 §5.41): a tunnel, not a physical port. */
const NAS_PORT_TYPE_VIRTUAL = 5;
const HEADER_LENGTH = 20;
const MAX_PACKET_LENGTH = 4096;
const MAX_ATTRIBUTE_VALUE = 253;
const TWO_TO_32 = 2 ** 32;

/**
 * `value` as a text attribute carries it (RFC 2865 §5: at most 253 octets): whole when it fits,
 * else its longest prefix of whole characters (code points) that does, so never a broken UTF-8
 * sequence. The same value gives the same cut, so a session's Start, Interim-Update and Stop
 * name the same User-Name.
 */
function attributeText(value: string): string {
  if (Buffer.byteLength(value, 'utf8') <= MAX_ATTRIBUTE_VALUE) return value;
  let cut = '';
  let octets = 0;
  for (const character of value) {
    octets += Buffer.byteLength(character, 'utf8');
    if (octets > MAX_ATTRIBUTE_VALUE) break;
    cut += character;
  }
  return cut;
}

/**
 * One accounting record as the outbox keeps it (JSON): everything but what changes with each
 * transmission (Identifier, Request Authenticator, Acct-Delay-Time).
 */
export const accountingRecordSchema = z.strictObject({
  statusType: z.enum(ACCT_STATUS_TYPES),
  sessionId: z.string().min(1),
  /** The user id, whole (the Admin API and SCIM take 255 characters, up to 1020 octets): cut when encoded. */
  userName: z.string().min(1),
  /** The client's IPv4 tunnel address. */
  framedIpAddress: z.string().nullable(),
  /** The client's IPv6 tunnel address (one /128, so Framed-IPv6-Address, not -Prefix). */
  framedIpv6Address: z.string().nullable(),
  /** The client's own public address, as the node saw it. */
  callingStationId: z.string().nullable(),
  nasIdentifier: z.string().min(1),
  /** The node's IPv4 or IPv6 address, where the portal knows one. */
  nasIpAddress: z.string().nullable(),
  /** Unix seconds of the event (start, interim, end). */
  eventTimestamp: z.int().nonnegative(),
  /** Class attributes, in order (the profile, then the device where there is one). */
  classes: z.array(z.string().min(1)),
  sessionTime: z.int().nonnegative().optional(),
  terminateCause: z.enum(Object.keys(TERMINATE_CAUSES) as [TerminateCause, ...TerminateCause[]]).optional(),
  inputOctets: z.number().int().nonnegative().optional(),
  outputOctets: z.number().int().nonnegative().optional(),
});
export type AccountingRecord = z.infer<typeof accountingRecordSchema>;

export interface EncodedRequest {
  readonly packet: Buffer;
  readonly identifier: number;
  /** The Request Authenticator: the response's authenticator is computed over it. */
  readonly authenticator: Buffer;
}

/**
 * The Accounting-Request for `record`, sent `delaySeconds` after its event (Acct-Delay-Time).
 * Its Request Authenticator is MD5(Code + Identifier + Length + 16 zero octets + Attributes +
 * secret) (RFC 2866 §3).
 */
export function encodeAccountingRequest(
  record: AccountingRecord,
  options: { readonly identifier: number; readonly secret: Buffer; readonly delaySeconds: number },
): EncodedRequest {
  const attributes = Buffer.concat(attributesOf(record, options.delaySeconds));
  const length = HEADER_LENGTH + attributes.length;
  if (length > MAX_PACKET_LENGTH) throw new RangeError(`an Accounting-Request of ${length} octets is too long`);
  const header = Buffer.alloc(HEADER_LENGTH);
  header.writeUInt8(RADIUS_CODE.accountingRequest, 0);
  header.writeUInt8(options.identifier & 0xff, 1);
  header.writeUInt16BE(length, 2);
  const authenticator = md5(header, attributes, options.secret);
  authenticator.copy(header, 4);
  return { packet: Buffer.concat([header, attributes]), identifier: options.identifier & 0xff, authenticator };
}

/** What an answer to a request turned out to be. */
export type ResponseCheck =
  | { readonly kind: 'accepted' }
  /** Not a response to this request (another identifier): keep waiting. */
  | { readonly kind: 'other' }
  /** A response to this request that fails its check (a wrong secret, or forged): ignored, as RFC 2866 says. */
  | { readonly kind: 'invalid'; readonly reason: string };

/**
 * Checks `packet` against the request it may answer: an Accounting-Response with the request's
 * Identifier whose Response Authenticator is MD5(Code + Identifier + Length + Request
 * Authenticator + Attributes + secret), compared in constant time.
 */
export function checkAccountingResponse(packet: Buffer, request: EncodedRequest, secret: Buffer): ResponseCheck {
  if (packet.length < HEADER_LENGTH)
    return { kind: 'invalid', reason: `${packet.length} octets: shorter than a header` };
  if (packet.readUInt8(1) !== request.identifier) return { kind: 'other' };
  const code = packet.readUInt8(0);
  if (code !== RADIUS_CODE.accountingResponse)
    return { kind: 'invalid', reason: `code ${code}, not Accounting-Response` };
  const length = packet.readUInt16BE(2);
  if (length < HEADER_LENGTH || length > packet.length)
    return { kind: 'invalid', reason: `length ${length} does not fit the ${packet.length} octets received` };
  const header = Buffer.from(packet.subarray(0, 4));
  const expected = md5(header, request.authenticator, packet.subarray(HEADER_LENGTH, length), secret);
  const presented = packet.subarray(4, HEADER_LENGTH);
  if (!timingSafeEqual(expected, presented))
    return { kind: 'invalid', reason: 'Response Authenticator does not match (shared secret?)' };
  return { kind: 'accepted' };
}

function attributesOf(record: AccountingRecord, delaySeconds: number): Buffer[] {
  const out: Buffer[] = [
    integer(ATTRIBUTE.acctStatusType, STATUS_TYPE_VALUE[record.statusType]),
    text(ATTRIBUTE.acctSessionId, record.sessionId),
    text(ATTRIBUTE.userName, record.userName),
    text(ATTRIBUTE.nasIdentifier, record.nasIdentifier),
  ];
  if (record.nasIpAddress !== null) {
    const nas = parseIpAddress(record.nasIpAddress);
    out.push(
      nas.family === 4
        ? address(ATTRIBUTE.nasIpAddress, record.nasIpAddress)
        : address(ATTRIBUTE.nasIpv6Address, record.nasIpAddress),
    );
  }
  out.push(integer(ATTRIBUTE.nasPortType, NAS_PORT_TYPE_VIRTUAL));
  if (record.framedIpAddress !== null) out.push(address(ATTRIBUTE.framedIpAddress, record.framedIpAddress));
  if (record.framedIpv6Address !== null) out.push(address(ATTRIBUTE.framedIpv6Address, record.framedIpv6Address));
  if (record.callingStationId !== null) out.push(text(ATTRIBUTE.callingStationId, record.callingStationId));
  for (const value of record.classes) out.push(text(ATTRIBUTE.class, value));
  out.push(integer(ATTRIBUTE.eventTimestamp, record.eventTimestamp));
  out.push(integer(ATTRIBUTE.acctDelayTime, Math.max(0, Math.min(Math.floor(delaySeconds), TWO_TO_32 - 1))));
  if (record.sessionTime !== undefined) out.push(integer(ATTRIBUTE.acctSessionTime, record.sessionTime));
  if (record.inputOctets !== undefined)
    out.push(...octets(ATTRIBUTE.acctInputOctets, ATTRIBUTE.acctInputGigawords, record.inputOctets));
  if (record.outputOctets !== undefined)
    out.push(...octets(ATTRIBUTE.acctOutputOctets, ATTRIBUTE.acctOutputGigawords, record.outputOctets));
  if (record.terminateCause !== undefined)
    out.push(integer(ATTRIBUTE.acctTerminateCause, TERMINATE_CAUSES[record.terminateCause]));
  return out;
}

function attribute(type: number, value: Buffer): Buffer {
  if (value.length === 0 || value.length > MAX_ATTRIBUTE_VALUE)
    throw new RangeError(`attribute ${type}: a value of ${value.length} octets (1 to ${MAX_ATTRIBUTE_VALUE})`);
  return Buffer.concat([Buffer.from([type, value.length + 2]), value]);
}

/** A text attribute, cut by `attributeText`: no record fails to encode for a long user id, profile or host name. */
function text(type: number, value: string): Buffer {
  return attribute(type, Buffer.from(attributeText(value), 'utf8'));
}

function integer(type: number, value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value >>> 0);
  return attribute(type, bytes);
}

/** IPv4 in 4 octets (NAS-IP-Address, Framed-IP-Address), IPv6 in 16 (NAS-IPv6-Address, Framed-IPv6-Address). */
function address(type: number, value: string): Buffer {
  const parsed = parseIpAddress(value);
  const bytes = Buffer.alloc(parsed.family === 4 ? 4 : 16);
  let rest = parsed.value;
  for (let index = bytes.length - 1; index >= 0; index--) {
    bytes[index] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return attribute(type, bytes);
}

/** A counter over 32 bits: the low 32 bits in the Octets attribute, the rest in Gigawords (RFC 2869 §5.1). */
function octets(low: number, high: number, value: number): Buffer[] {
  const gigawords = Math.floor(value / TWO_TO_32);
  const out = [integer(low, value % TWO_TO_32)];
  if (gigawords > 0) out.push(integer(high, Math.min(gigawords, TWO_TO_32 - 1)));
  return out;
}

function md5(...parts: Buffer[]): Buffer {
  const hash = createHash('md5');
  for (const part of parts) hash.update(part);
  return hash.digest();
}
