// The vocabulary of the Admin API's request parameters: every rule a parameter follows, in one
// place, for the portal's routes (which answer the reference's error texts from it,
// src/http/plumbing/params.ts), the typed client and the OpenAPI document. Each call's parameters are a
// z.object of these (src/protocol/admin-api.ts); values arrive as text (query string or form).
import { z } from 'zod';
import type { PortalConfig } from '../config/portal-config.js';
import { ipAddressFamily } from '../net/ip-prefix.js';
import { asConnectionId, asDeviceId, asProfileId, asUserId } from '../shared/ids.js';
import {
  durationMilliseconds,
  isBoundedIsoDuration,
  isIsoDuration,
  MAX_DURATION,
  parseIsoDuration,
  type IsoDuration,
} from '../shared/iso-duration.js';
import { DEVICE_STATES } from '../shared/device-states.js';
import { PLATFORMS } from '../shared/platforms.js';
import { formatAtom, isAtomTime, isCalendarDay } from '../shared/time.js';
import {
  isCanonicalWireGuardKey,
  isUsableWireGuardPublicKey,
  isWireGuardKey,
  NON_CANONICAL_KEY_REASON,
} from '../wireguard/keys.js';
import { EVERY_EVENT_TYPE, isWebhookEventType, WEBHOOK_TEST_EVENT, type WebhookEventType } from './webhooks.js';

/** Marks a refinement whose message is added to `invalid value for "name"`, for a reason the client cannot guess. */
export const SHOWN_TO_CLIENT = 'shownToClient';

/** What a 400 answer says after `invalid value for "NAME"`, when the form is not obvious. */
export interface ParamNote {
  /** Why any wrong value is wrong (`one of ios, macos, …`). */
  readonly reason?: string;
  /** The form expected, after the value sent: `"30d" is not an ISO 8601 duration such as P30D`. */
  readonly expectedForm?: string;
  /** The values the configuration accepts here (`expires_in`: supportedSessionExpiry). */
  readonly allowedHere?: (config: PortalConfig) => readonly string[];
}

/** The notes of the vocabulary's types; a described copy of a type inherits them. */
export const paramNotes = z.registry<ParamNote>();

const ISO_DURATION_FORM = 'an ISO 8601 duration such as P30D';

/** Said when a duration is longer than the portal takes (the form itself is right). */
const boundedDuration = (text: string) => isBoundedIsoDuration(text);
const BOUNDED_DURATION_REFUSAL = {
  message: `a duration of at most ${MAX_DURATION}`,
  params: { [SHOWN_TO_CLIENT]: true },
};

/**
 * The longest duration text taken where it is kept as written (an admin key's lifetime, a
 * column of 64 characters): `PT000…0060S` passes every other check, and PostgreSQL refused it
 * (a 500) where SQLite kept it.
 */
const MAX_DURATION_CHARS = 64;
const DURATION_TEXT_REFUSAL = {
  message: `a duration of at most ${MAX_DURATION_CHARS} characters`,
  params: { [SHOWN_TO_CLIENT]: true },
  abort: true,
};

/** The most characters (code points) of a user id: the columns' `varchar(255)`, as the reference's. */
export const MAX_USER_ID_LENGTH = 255;

/** The most items a listing's page holds (its `limit`), and the most uses an enrollment token takes. */
export const MAX_PAGE_SIZE = 1000;

/** A count of 1 to 1,000, in digits. */
const oneToThousand = z
  .string()
  .regex(/^[1-9]\d{0,3}$/)
  .transform(Number)
  .refine((value) => value <= MAX_PAGE_SIZE);

/** Length in characters (code points), as the reference counts multibyte characters once. */
const lengthBetween = (min: number, max: number) => (value: string) => {
  const length = [...value].length;
  return length >= min && length <= max;
};

/**
 * No NUL character: PostgreSQL cannot store one in text, so it is refused the same way
 * whichever database the portal runs on.
 */
const withoutNul = (value: string) => !value.includes('\u0000');

export const param = {
  userId: z.string().refine(lengthBetween(1, MAX_USER_ID_LENGTH)).refine(withoutNul).transform(asUserId),
  profileId: z
    .string()
    .regex(/^[a-zA-Z0-9-.]+$/)
    .transform(asProfileId),
  displayName: z.string().refine(lengthBetween(1, 64)).refine(withoutNul),
  /** WireGuard public key or OpenVPN Common Name: Base64 of 32 bytes. */
  connectionId: z.string().refine(isWireGuardKey).transform(asConnectionId),
  yesNo: z.enum(['yes', 'no']).transform((value) => value === 'yes'),
  onOff: z.enum(['on', 'off']).transform((value) => value === 'on'),
  /** At most MAX_DURATION: an end past it is no date the portal can hold or write. */
  isoDuration: z
    .string()
    .refine(isIsoDuration, { abort: true })
    .refine((text) => text.length <= MAX_DURATION_CHARS, DURATION_TEXT_REFUSAL)
    .refine(boundedDuration, BOUNDED_DURATION_REFUSAL)
    .register(paramNotes, { expectedForm: ISO_DURATION_FORM }),
  /** The `expires_in` of create, extend and enrollment_token: a duration the configuration allows. */
  sessionExpiry: z
    .string()
    .refine(isIsoDuration, { abort: true })
    .refine(boundedDuration, BOUNDED_DURATION_REFUSAL)
    .register(paramNotes, { expectedForm: ISO_DURATION_FORM, allowedHere: (config) => config.supportedSessionExpiry }),
  /** A device's own WireGuard public key: Base64 of 32 bytes, a usable X25519 point (not small-order), canonically encoded. */
  devicePublicKey: z
    .string()
    .refine(isUsableWireGuardPublicKey, { abort: true })
    .refine(isCanonicalWireGuardKey, { message: NON_CANONICAL_KEY_REASON, params: { [SHOWN_TO_CLIENT]: true } }),
  /** A PEM PKCS#10 certificate request; its signature and key type are checked by the use case. */
  certificateRequest: z
    .string()
    .min(1)
    .max(16 * 1024),
  // Parameters of this portal's extensions (connection_log, stats, audit_log).
  /** An ISO 8601 date (`2026-03-01`, midnight UTC) or date-time (hours 00–23) with `Z` or an offset; as ATOM (UTC). */
  timestamp: z
    .string()
    .regex(/^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d(:?\d\d)?))?$/)
    // ISO 8601 allows an offset of whole hours (`+01`, as some logs write it), which Date.parse does not read.
    .transform((text) => (text.includes('T') && /[+-]\d\d$/.test(text) ? `${text}:00` : text))
    .refine(isAtomTime)
    .transform((text) => formatAtom(new Date(text)))
    .register(paramNotes, { expectedForm: 'an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z' }),
  /** An admin key's name, or `secret`. */
  keyName: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
  /** A page cursor of the audit log (an entry's id). */
  auditCursor: z.string().regex(/^[0-9a-f]{24}$/),
  /** A calendar day, `YYYY-MM-DD`. */
  date: z
    .string()
    .regex(/^\d{4}-\d\d-\d\d$/)
    .refine(isCalendarDay)
    .register(paramNotes, { expectedForm: 'a date such as 2026-03-01' }),
  /** A page size: 1 to 1,000. */
  pageSize: oneToThousand,
  // Parameters of the webhook calls.
  /** An absolute http: or https: URL, at most 2,048 characters. */
  webhookUrl: z
    .string()
    .max(2048)
    .refine((text) => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol))
    .transform((text) => new URL(text)),
  /** Comma-separated webhook event types (`user.created,node.down`), or `*` for every type. */
  webhookEventTypes: z
    .string()
    .transform((text) => text.split(',').map((type) => type.trim()))
    .refine((types) => types.length > 0 && types.every((type) => type === EVERY_EVENT_TYPE || isWebhookEventType(type)))
    .transform((types) => types as (WebhookEventType | typeof EVERY_EVENT_TYPE)[]),
  webhookEventType: z.string().refine((type) => type === WEBHOOK_TEST_EVENT || isWebhookEventType(type)),
  description: z.string().refine(lengthBetween(1, 255)).refine(withoutNul),
  webhookId: z.string().regex(/^wh_[0-9a-f]{24}$/),
  /** A UUID (event ids, delivery ids: the delivery log's cursor). */
  uuid: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  deliveryState: z.enum(['pending', 'delivered', 'failed', 'cancelled']),
  revocationState: z.enum(['pending', 'overdue', 'applied', 'superseded']),
  /** How long a rotated-out secret keeps signing: PT0S to P7D. */
  secretOverlap: z
    .string()
    .transform((text) => parseIsoDuration(text))
    .refine((duration) => duration !== null && durationMilliseconds(duration) <= 7 * 86_400_000)
    .transform((duration) => duration as IsoDuration)
    .register(paramNotes, { expectedForm: 'an ISO 8601 duration from PT0S to P7D such as P1D' }),
  /** How often an enrollment token can be used: 1 to 1,000. */
  tokenUses: oneToThousand,
  /** An enrollment token's id (characters 5–16 of the token). */
  tokenId: z.string().regex(/^[0-9A-Za-z]{12}$/),
  /** An enrollment token as a device sends it; its form and checksum are checked by the use case. */
  enrollmentToken: z.string().min(1).max(256),
  // Parameters of the device calls.
  deviceId: z
    .string()
    .regex(/^dev_[0-9a-f]{24}$/)
    .transform(asDeviceId),
  /** One of PLATFORMS; the error lists them. */
  platform: z.enum(PLATFORMS).register(paramNotes, { reason: `one of ${PLATFORMS.join(', ')}` }),
  /** A serial number or an MDM's id of a device: 1–255 printable characters. */
  deviceIdentifier: z
    .string()
    .refine(lengthBetween(1, 255))
    .refine((value) => /^[\x21-\x7e]+$/.test(value)),
  deviceState: z.enum(DEVICE_STATES),
  /** Why a device is suspended (free text, the MDM's own reasons too): 1–200 characters, no control characters. */
  suspensionReason: z
    .string()
    .refine(lengthBetween(1, 200))
    .refine((value) => !/\p{Cc}/u.test(value))
    .register(paramNotes, { reason: 'a reason of 1 to 200 characters, no control characters' }),
  deviceIdentity: z.enum(['token', 'certificate']),
  /** An IPv4 or IPv6 address, any text form (the use case makes it canonical); no zone, no prefix. */
  ipAddress: z
    .string()
    .refine((text) => ipAddressFamily(text) !== null)
    .register(paramNotes, { expectedForm: 'an IPv4 or IPv6 address such as 10.10.3.7 or fd00::7' }),
  /** A TCP or UDP port, 1–65535, in digits. */
  port: z
    .string()
    .regex(/^[1-9]\d{0,4}$/)
    .transform(Number)
    .refine((value) => value <= 65535)
    .register(paramNotes, { reason: 'a port from 1 to 65535' }),
  /** Why a person is looked up by address (the audit log keeps it): 1–200 characters. */
  lookupReason: z
    .string()
    .refine(lengthBetween(1, 200))
    .refine(withoutNul)
    .register(paramNotes, { reason: 'a reason of 1 to 200 characters' }),
  // Parameters of the admin key calls.
  /** Comma-separated values (profile ids, CIDR prefixes), each checked by the use case. */
  commaList: z
    .string()
    .max(4096)
    .transform((text) => text.split(',').map((item) => item.trim())),
  /** A `users` cursor: a user id (up to 255 characters, 4 bytes each) in base64url. */
  userCursor: z.string().regex(/^[A-Za-z0-9_-]{1,1400}$/),
  /** An opaque cursor this portal handed out. */
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/),
  // Parameters of the legal hold calls.
  /** A legal hold's id. */
  legalHoldId: z.string().regex(/^lh_[0-9a-f]{32}$/),
  /** Why a hold is made (a case or an order): 1–500 characters. */
  legalHoldReason: z.string().refine(lengthBetween(1, 500)).refine(withoutNul),
} as const;

/** A parameter the call needs. */
export function required<S extends z.ZodType<unknown, string>>(schema: S, description: string): S {
  return schema.describe(description);
}

/** A parameter the call can do without. */
export function optional<S extends z.ZodType<unknown, string>>(schema: S, description: string): z.ZodOptional<S> {
  return schema.optional().describe(description);
}

/** A call's parameters: required and optional parameters of the vocabulary, in the order they are checked. */
export type ParamsSchema = z.ZodObject<Record<string, z.ZodType<unknown, string | undefined>>>;

/** One parameter of a call as the server reads it and the OpenAPI document shows it. */
export interface ParamField {
  readonly name: string;
  /** The parameter's type, without its optionality. */
  readonly schema: z.ZodType<unknown, string>;
  readonly required: boolean;
  readonly description: string | undefined;
  readonly note: ParamNote | undefined;
}

/** Each call's fields, worked out once: zod's registry lookups cost a request some microseconds. */
const fieldsOfSchema = new WeakMap<ParamsSchema, readonly ParamField[]>();

/** The parameters of a call, in their order. */
export function paramFields(schema: ParamsSchema): readonly ParamField[] {
  let fields = fieldsOfSchema.get(schema);
  if (fields === undefined) {
    fields = Object.freeze(fieldsOf(schema));
    fieldsOfSchema.set(schema, fields);
  }
  return fields;
}

function fieldsOf(schema: ParamsSchema): ParamField[] {
  return Object.entries(schema.shape).map(([name, field]) => {
    const inner = (field instanceof z.ZodOptional ? field.unwrap() : field) as z.ZodType<unknown, string>;
    return {
      name,
      schema: inner,
      required: !(field instanceof z.ZodOptional),
      description: field.description ?? inner.description,
      note: paramNotes.get(inner) as ParamNote | undefined,
    };
  });
}

/**
 * A call's parameters as a client sends them: the text each one reads (a number where it reads
 * a number, sent as its digits); the typed client's and the CLI's request types.
 */
export type SentParams<S extends ParamsSchema> = {
  readonly [K in keyof z.input<S>]:
    | z.input<S>[K]
    | (NonNullable<z.output<S>[K & keyof z.output<S>]> extends number ? number : never);
};
