// The validator vocabulary: every request parameter rule of the Admin API, in one place.
// Rules and error messages follow the reference (§3) so scripts written against it keep
// working: `missing post parameter "user_id"`, `invalid value for "display_name"`, ... For
// durations and times, whose form is easy to get wrong, the reference's text is followed by the
// expected form (and the values the configuration allows there):
// `invalid value for "expires_in": "30d" is not an ISO 8601 duration such as P30D; allowed here: P90D, P1Y`.
// The same schemas feed the OpenAPI description (src/http/openapi.ts).
import { z } from 'zod';
import { ipAddressFamily } from '../net/ip-prefix.js';
import { ADMIN_SCOPES } from '../protocol/admin-api.js';
import type { PortalConfig } from '../config/portal-config.js';
import { asConnectionId, asDeviceId, asProfileId, asUserId } from '../shared/ids.js';
import { isPlatform, PLATFORMS, type Platform } from '../shared/platforms.js';
import { durationMilliseconds, isIsoDuration, parseIsoDuration, type IsoDuration } from '../shared/iso-duration.js';
import { EVERY_EVENT_TYPE, isWebhookEventType, WEBHOOK_TEST_EVENT, type WebhookEventType } from '../protocol/webhooks.js';
import { formatAtom } from '../shared/time.js';
import { isCanonicalWireGuardKey, isUsableWireGuardPublicKey, isWireGuardKey, NON_CANONICAL_KEY_REASON } from '../wireguard/keys.js';
import { HttpError } from './http-error.js';

export type ParamSource = 'query' | 'post';

/** Marks a refinement whose message is added to `invalid value for "name"`, for a reason the client cannot guess. */
const SHOWN = 'shownToClient';

export interface ParamSpec<T> {
  readonly schema: z.ZodType<T, string>;
  readonly required: boolean;
  readonly description: string;
  /** The values the configuration accepts here, named in the 400 answer (`expires_in`: supportedSessionExpiry). */
  readonly allowedHere?: (config: PortalConfig) => readonly string[];
}

/** What follows `invalid value for "NAME"`, when the form is not obvious. */
export interface ParamOptions {
  readonly allowedHere?: (config: PortalConfig) => readonly string[];
}

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
  userId: z.string().refine(lengthBetween(1, 255)).refine(withoutNul).transform(asUserId),
  profileId: z
    .string()
    .regex(/^[a-zA-Z0-9-.]+$/)
    .transform(asProfileId),
  displayName: z.string().refine(lengthBetween(1, 64)).refine(withoutNul),
  /** WireGuard public key or OpenVPN Common Name: Base64 of 32 bytes. */
  connectionId: z.string().refine(isWireGuardKey).transform(asConnectionId),
  yesNo: z.enum(['yes', 'no']).transform((value) => value === 'yes'),
  onOff: z.enum(['on', 'off']).transform((value) => value === 'on'),
  isoDuration: z.string().refine(isIsoDuration),
  /** A device's own WireGuard public key: Base64 of 32 bytes, a usable X25519 point (not small-order), canonically encoded. */
  devicePublicKey: z
    .string()
    .refine(isUsableWireGuardPublicKey, { abort: true })
    .refine(isCanonicalWireGuardKey, { message: NON_CANONICAL_KEY_REASON, params: { [SHOWN]: true } }),
  /** A PEM PKCS#10 certificate request; its signature and key type are checked by the use case. */
  certificateRequest: z
    .string()
    .min(1)
    .max(16 * 1024),
  // Parameters of this portal's extensions (connection_log, stats, audit_log).
  /** An ISO 8601 date (`2026-03-01`, midnight UTC) or date-time with `Z` or an offset; as ATOM (UTC). */
  timestamp: z
    .string()
    .regex(/^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d))?$/)
    .refine((text) => Number.isFinite(Date.parse(text)))
    .transform((text) => formatAtom(new Date(text))),
  /** An admin key's name, or `secret`. */
  keyName: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
  /** A page cursor of the audit log (an entry's id). */
  auditCursor: z.string().regex(/^[0-9a-f]{24}$/),
  /** A calendar day, `YYYY-MM-DD`. */
  date: z
    .string()
    .regex(/^\d{4}-\d\d-\d\d$/)
    .refine((value) => new Date(`${value}T00:00:00Z`).toISOString().startsWith(value)),
  /** A page size: 1 to 1,000. */
  pageSize: z
    .string()
    .regex(/^[1-9]\d{0,3}$/)
    .transform(Number)
    .refine((value) => value <= 1000),
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
    .transform((duration) => duration as IsoDuration),
  /** How often an enrollment token can be used: 1 to 1,000. */
  tokenUses: z
    .string()
    .regex(/^[1-9]\d{0,3}$/)
    .transform(Number)
    .refine((value) => value <= 1000),
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
  platform: z
    .string()
    .refine(isPlatform, { message: `one of ${PLATFORMS.join(', ')}`, params: { [SHOWN]: true } })
    .transform((value) => value as Platform),
  /** A serial number or an MDM's id of a device: 1–255 printable characters. */
  deviceIdentifier: z
    .string()
    .refine(lengthBetween(1, 255))
    .refine((value) => /^[\x21-\x7e]+$/.test(value)),
  deviceState: z.enum(['registered', 'active', 'retired']),
  deviceIdentity: z.enum(['token', 'certificate']),
  /** An IPv4 or IPv6 address, any text form (the use case makes it canonical); no zone, no prefix. */
  ipAddress: z.string().refine((text) => ipAddressFamily(text) !== null),
  // Parameters of the admin key calls.
  adminScope: z.enum(ADMIN_SCOPES),
  /** Comma-separated values (profile ids, CIDR prefixes), each checked by the use case. */
  commaList: z
    .string()
    .max(4096)
    .transform((text) => text.split(',').map((item) => item.trim())),
  /** A `users` cursor: a user id (up to 255 characters, 4 bytes each) in base64url. */
  userCursor: z.string().regex(/^[A-Za-z0-9_-]{1,1400}$/),
  /** An opaque cursor this portal handed out. */
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/),
} as const;

/** Entries of a `users` or `disabled_users` page when `limit` is not sent. */
export const DEFAULT_USERS_PAGE = 100;

/** The extension parameters of `users` and `disabled_users`: without any of them, the specification's answer. */
export const userListingParams = {
  prefix: optional(param.userId, 'extension: only user ids starting with this text (case-sensitive); the answer then has `next_cursor`'),
  limit: optional(param.pageSize, `extension: user ids per page, 1–1000 (default ${DEFAULT_USERS_PAGE}); the answer then has \`next_cursor\``),
  cursor: optional(param.userCursor, 'extension: `next_cursor` of the previous page'),
};

/** The form a value of these parameter types has, for their 400 answers: "… is not FORM". */
const EXPECTED_FORMS = new Map<z.ZodType<unknown, string>, string>([
  [param.isoDuration, 'an ISO 8601 duration such as P30D'],
  [param.secretOverlap, 'an ISO 8601 duration from PT0S to P7D such as P1D'],
  [param.timestamp, 'an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z'],
  [param.date, 'a date such as 2026-03-01'],
  [param.ipAddress, 'an IPv4 or IPv6 address such as 10.10.3.7 or fd00::7'],
]);

export function required<T>(schema: z.ZodType<T, string>, description: string, options: ParamOptions = {}): ParamSpec<T> {
  return { schema, required: true, description, ...options };
}

export function optional<T>(schema: z.ZodType<T, string>, description: string, options: ParamOptions = {}): ParamSpec<T | undefined> {
  return { schema: schema as z.ZodType<T | undefined, string>, required: false, description, ...options };
}

/** The `expires_in` of create, extend and enrollment_token: the configuration's list of durations. */
export const SESSION_EXPIRY_ALLOWED: ParamOptions = { allowedHere: (config) => config.supportedSessionExpiry };

export type ParamShape = Record<string, ParamSpec<unknown>>;
export type ParamValues<S extends ParamShape> = { [K in keyof S]: S[K] extends ParamSpec<infer T> ? T : never };

/**
 * Reads and validates parameters from a query string or form body (already decoded into an
 * object). Fields are checked in the order the shape lists them; the first failure answers 400.
 * `config` gives the values a parameter allows here (ParamSpec.allowedHere) for that answer.
 */
export function readParams<S extends ParamShape>(source: ParamSource, input: unknown, shape: S, config?: PortalConfig): ParamValues<S> {
  const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const sourceName = source === 'post' ? 'post parameter' : 'query parameter';
  const result: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(shape)) {
    const raw = Object.hasOwn(values, name) ? values[name] : undefined;
    // PHP clients send arrays as `user_id[]=a` (or `user_id[0]=a`); that is an array, not a missing value.
    if (raw === undefined && Object.keys(values).some((key) => key.startsWith(`${name}[`))) {
      throw new HttpError(400, `value of ${sourceName} "${name}" MUST be string`);
    }
    if (raw === undefined) {
      if (spec.required) throw new HttpError(400, `missing ${sourceName} "${name}"`);
      result[name] = undefined;
      continue;
    }
    if (typeof raw !== 'string') throw new HttpError(400, `value of ${sourceName} "${name}" MUST be string`);
    const parsed = spec.schema.safeParse(raw);
    if (!parsed.success) throw new HttpError(400, invalidValue(name, raw, spec, config, parsed.error));
    result[name] = parsed.data;
  }
  return result as ParamValues<S>;
}

/** The reference's `invalid value for "NAME"`, then, for durations and times, the value and the form expected. */
function invalidValue(name: string, raw: string, spec: ParamSpec<unknown>, config: PortalConfig | undefined, error: z.ZodError): string {
  // A reason the schema marked as shown (e.g. a key's non-canonical encoding) is said as it is.
  const reason = error.issues.find((issue) => issue.code === 'custom' && issue.params?.[SHOWN] === true);
  if (reason !== undefined) return `invalid value for "${name}": ${reason.message}`;
  const expected = EXPECTED_FORMS.get(spec.schema);
  if (expected === undefined) return `invalid value for "${name}"`;
  const shown = [...raw].length > 64 ? `${[...raw].slice(0, 64).join('')}…` : raw;
  const allowed = spec.allowedHere === undefined || config === undefined ? [] : spec.allowedHere(config);
  return `invalid value for "${name}": ${JSON.stringify(shown)} is not ${expected}${allowed.length === 0 ? '' : `; allowed here: ${allowed.join(', ')}`}`;
}

/**
 * Reads a form body against a wire schema of src/protocol (the Node API), answering 400 with
 * the same messages as readParams: the first field in the schema's order that is wrong.
 */
export function readForm<S extends z.ZodObject>(schema: S, input: unknown): z.output<S> {
  const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  const name = String(parsed.error.issues[0]?.path[0] ?? '');
  const raw = values[name];
  if (raw === undefined) throw new HttpError(400, `missing post parameter "${name}"`);
  if (typeof raw !== 'string' && !Array.isArray(raw)) throw new HttpError(400, `value of post parameter "${name}" MUST be string`);
  throw new HttpError(400, `invalid value for "${name}"`);
}
