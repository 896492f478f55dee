// What a webhook receiver gets (the portal's outgoing wire protocol, described once here for the
// portal, its documentation and the tests): the event types, the JSON body `{id, type, at, data}`
// with each type's `data`, and the headers of every delivery. The signature scheme is the one
// Stripe and Tailscale use: `t=UNIX_SECONDS,v1=HEX` where HEX is HMAC-SHA-256 of `t.body` under
// the subscription's secret (src/keys/webhook-signature.ts); during a secret rotation one `v1`
// per secret. A body never carries a private key, a configuration file or a secret.
import { z } from 'zod';
import { platformSchema } from './platforms.js';

/** The event types a subscription may ask for. */
export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.disabled',
  'user.enabled',
  'user.destroyed',
  'configuration.created',
  'configuration.deleted',
  'configuration.expired',
  'configuration.expiring',
  'session.started',
  'session.ended',
  'node.down',
  'node.up',
  'node.nat_changed',
  'revocation.applied',
  'revocation.overdue',
  'device.registered',
  'device.enrolled',
  'device.replaced',
  'device.retired',
  'device.suspended',
  'device.resumed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(type: string): type is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type);
}

/** Sent only by `test_webhook`, to the one subscription tested, whatever types it asked for. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

/** A subscription's event types: these, or `*` for every type (also those added later). */
export const EVERY_EVENT_TYPE = '*';

/** The headers of every delivery. */
export const WEBHOOK_HEADERS = {
  /** `t=UNIX_SECONDS,v1=HEX[,v1=HEX]`: the time of this attempt, one HMAC-SHA-256 per signing secret. */
  signature: 'VPN-Portal-Signature',
  /** The body's `id`: the same at every attempt; receivers drop ids they have seen. */
  eventId: 'VPN-Portal-Event-Id',
  eventType: 'VPN-Portal-Event-Type',
  /** 1 for the first attempt, then 2, 3, … */
  attempt: 'VPN-Portal-Delivery-Attempt',
} as const;

/** Receivers should refuse a signature whose `t` is further than this from their clock (replays). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

const configuration = {
  user_id: z.string(),
  profile_id: z.string(),
  connection_id: z.string().describe('the WireGuard public key or the OpenVPN certificate common name'),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
  node_number: z.int(),
};

/** A revocation receipt (GET /revocation has it in full): every node `applied`, or which are still `pending`. */
const revocation = {
  revocation_id: z.string(),
  user_id: z.string(),
  connection_ids: z.array(z.string()),
  nodes: z.array(
    z.object({
      node_number: z.int(),
      state: z.enum(['pending', 'applied']),
      applied_at: z.string().nullable().describe('when the node confirmed the removal; null while pending'),
    }),
  ),
};

const device = {
  device_id: z.string(),
  user_id: z.string(),
  profile_id: z.string().describe("the device's profile"),
  platform: platformSchema,
  serial: z.string().nullable(),
  mdm_id: z.string().nullable(),
};

const envelope = <T extends string, D extends z.ZodRawShape>(type: T, data: D) =>
  z.object({
    id: z.string().describe('the event id (a UUIDv7): the same at every attempt and for every subscription'),
    type: z.literal(type),
    at: z.string().describe('when it happened, ISO 8601 with numeric UTC offset'),
    data: z.object(data),
  });

/** Every body a receiver can get, by `type`. */
export const webhookPayloadSchema = z.discriminatedUnion('type', [
  envelope('user.created', { user_id: z.string() }),
  envelope('user.disabled', { user_id: z.string() }),
  envelope('user.enabled', { user_id: z.string() }),
  envelope('user.destroyed', { user_id: z.string() }),
  envelope('configuration.created', { ...configuration, expires_at: z.string() }),
  envelope('configuration.deleted', configuration),
  envelope('configuration.expired', configuration),
  envelope('configuration.expiring', { ...configuration, expires_at: z.string() }),
  envelope('session.started', {
    ...configuration,
    ip_four: z.string(),
    ip_six: z.string(),
    originating_ip: z.string().nullable(),
  }),
  envelope('session.ended', {
    connection_id: z.string(),
    vpn_proto: z.enum(['wireguard', 'openvpn']),
    node_number: z.int(),
    bytes_in: z.number(),
    bytes_out: z.number(),
    // What the session's start recorded; null when the portal never heard of its start.
    user_id: z.string().nullable(),
    profile_id: z.string().nullable(),
    ip_four: z.string().nullable(),
    ip_six: z.string().nullable(),
    originating_ip: z.string().nullable(),
  }),
  envelope('node.down', { node_number: z.int(), reason: z.string() }),
  envelope('node.up', { node_number: z.int() }),
  envelope('node.nat_changed', {
    node_number: z.int(),
    applied_at: z.string().describe('from when the node applies it (ISO 8601 UTC)'),
    mode: z.enum(['none', 'masquerade', 'deterministic']),
    // deterministic only (else null): what the mapping is computed from.
    ranges: z.array(z.string()).nullable(),
    public_addresses: z.array(z.string()).nullable(),
    ports_per_client: z.int().nullable(),
  }),
  envelope('revocation.applied', revocation),
  envelope('revocation.overdue', revocation),
  envelope('device.registered', device),
  envelope('device.retired', device),
  envelope('device.enrolled', { ...device, configuration: z.object(configuration) }),
  envelope('device.replaced', {
    ...device,
    configuration: z.object(configuration).describe('the new configuration'),
    replaced: z
      .array(z.object(configuration))
      .describe('the configurations of the same profile it replaced (each also sent as configuration.deleted)'),
  }),
  envelope('device.suspended', {
    ...device,
    reason: z.string().describe('why (`administrator` unless the call said otherwise; `noncompliant`, … from the MDM)'),
    by: z.string().describe('who: the admin key name, `mdm`, `(portal)`, …'),
    revocation_id: z
      .string()
      .nullable()
      .describe('the receipt of its configurations leaving the nodes; null when it had none'),
  }),
  envelope('device.resumed', {
    ...device,
    reason: z.string().describe('the reason of the suspension that ended'),
    by: z.string().describe('who resumed it'),
  }),
  envelope(WEBHOOK_TEST_EVENT, { webhook_id: z.string() }),
]);
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;
/** What core hands to the outbox: a body without its id and time. */
export type WebhookMessage = { [P in WebhookPayload as P['type']]: Pick<P, 'type' | 'data'> }[WebhookPayload['type']];
