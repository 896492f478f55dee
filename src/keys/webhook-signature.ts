// The signing secrets of webhook subscriptions and the signature every delivery carries: Stripe's
// and Tailscale's scheme, `t=UNIX_SECONDS,v1=HEX`, where HEX is HMAC-SHA-256 over `t.body` keyed
// with the secret as text. Signing the time with the body lets a receiver refuse replays; one
// `v1` per secret lets a receiver switch secrets without missing a delivery during a rotation.
import { createHmac, randomBytes } from 'node:crypto';

/** Secrets read as what they are in a configuration file or a log excerpt. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** A new signing secret: the prefix and 32 random bytes in Base64url. */
export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The signature header's value for `body` sent at `timestamp` (Unix seconds), one `v1` per secret. */
export function webhookSignature(secrets: readonly string[], timestamp: number, body: string): string {
  const signed = `${timestamp}.${body}`;
  return [
    `t=${timestamp}`,
    ...secrets.map((secret) => `v1=${createHmac('sha256', secret).update(signed).digest('hex')}`),
  ].join(',');
}
