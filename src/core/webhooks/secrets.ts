// Webhook signing secrets at rest: sealed with DATA/keys/webhooks.key (AES-256-GCM, the row's
// subscription id authenticated with it), so a copy of the database alone cannot forge a
// delivery. Opened only to sign, and to tell whether a kept answer's secret is still the
// current one; shown once, when made.
import { AnswerCipher } from '../../keys/answer-cipher.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import type { HandOutEnd } from '../../storage/idempotency.js';
import { findWebhook, type StoredWebhook } from '../../storage/webhooks.js';
import type { PortalContext } from '../context.js';

export function sealWebhookSecret(ctx: PortalContext, webhookId: string, secret: string): string {
  return webhookCipher(ctx).seal(secret, sealContext(webhookId));
}

/** The secrets that sign a delivery at `now`: the current one, and the previous one while its overlap lasts. */
export function signingSecrets(ctx: PortalContext, webhook: StoredWebhook, now: string): string[] {
  const cipher = webhookCipher(ctx);
  const open = (sealed: string): string => {
    const secret = cipher.open(sealed, sealContext(webhook.webhookId));
    if (secret === null) {
      throw new Error(
        `the secret of webhook ${webhook.webhookId} cannot be opened: every portal instance needs the same ${ctx.keys.webhookKeyPath}`,
      );
    }
    return secret;
  };
  const secrets = [open(webhook.secret)];
  if (webhook.previousSecret !== null && webhook.previousSecretUntil !== null && now < webhook.previousSecretUntil) {
    secrets.push(open(webhook.previousSecret));
  }
  return secrets;
}

/**
 * Whether the secret a kept `create_webhook` or `rotate_webhook_secret` answer (Idempotency-Key)
 * handed out may be handed out again: `revoked` once its subscription is deleted, `replaced`
 * once a rotation gave it a new one (the old one signs only while its overlap lasts); null while
 * it is the subscription's current secret.
 */
export async function endOfWebhookSecret(
  ctx: PortalContext,
  webhookId: string,
  secret: string,
): Promise<HandOutEnd | null> {
  const webhook = await findWebhook(ctx.db, webhookId);
  if (webhook === undefined) return 'revoked';
  const current = webhookCipher(ctx).open(webhook.secret, sealContext(webhookId));
  return current !== null && constantTimeEquals(secret, current) ? null : 'replaced';
}

function sealContext(webhookId: string): string {
  return `webhook:${webhookId}`;
}

function webhookCipher(ctx: PortalContext): AnswerCipher {
  // Made on first use when generate-secrets did not make it.
  if (ctx.keys.webhookKey() === null) ctx.keys.createWebhookKey();
  const key = ctx.keys.webhookKey();
  if (key === null) throw new Error(`${ctx.keys.webhookKeyPath} is not 64 hex characters`);
  return new AnswerCipher(key);
}
