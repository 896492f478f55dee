// Webhook signing secrets at rest: sealed with DATA/keys/webhooks.key (AES-256-GCM, the row's
// subscription id authenticated with it), so a copy of the database alone cannot forge a
// delivery. Opened only to sign, and to tell whether a kept answer's secret is still the
// current one; shown once, when made.
import { AnswerCipher } from '../../keys/answer-cipher.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import type { HandOutEnd } from '../../storage/idempotency.js';
import { findWebhook, listWebhooks, type StoredWebhook } from '../../storage/webhooks.js';
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

/** Refuses a start: subscriptions exist whose secrets are sealed with a key file this instance does not have. */
export class MissingWebhookKey extends Error {
  override readonly name = 'MissingWebhookKey';
}

/**
 * Checked at start. Without `webhooks.key` while subscriptions exist, the first use would make a
 * new key: this instance could then sign nothing, and the subscriptions it made could be signed
 * by no other instance. A key file that does not open every subscription's secret is only logged
 * (it is what an administrator who lost the key made anew, and those subscriptions are then to be
 * made again).
 */
export async function checkWebhookKeyAtStart(ctx: PortalContext): Promise<void> {
  const webhooks = await listWebhooks(ctx.db);
  if (webhooks.length === 0) return;
  const key = ctx.keys.webhookKey();
  if (key === null) {
    const subscriptions =
      webhooks.length === 1
        ? '1 webhook subscription has its secret'
        : `${webhooks.length} webhook subscriptions have their secrets`;
    throw new MissingWebhookKey(
      `${subscriptions} sealed with ${ctx.keys.webhookKeyPath}, which this portal does not have (or cannot read as 64 hex characters): copy the file from the instance that made them (every instance on one database needs the same one); if it is lost, "vpn-portal generate-secrets --admin-api" makes a new one and the subscriptions must then be deleted and made again`,
    );
  }
  const cipher = new AnswerCipher(key);
  const unopened = webhooks
    .filter((webhook) => cipher.open(webhook.secret, sealContext(webhook.webhookId)) === null)
    .map((webhook) => webhook.webhookId);
  if (unopened.length > 0) {
    ctx.logger.error(
      { webhooks: unopened },
      `${ctx.keys.webhookKeyPath} does not open the secret of ${unopened.length} of ${webhooks.length} webhook subscriptions: their deliveries fail until the file is the one they were made with, or they are deleted and made again`,
    );
  }
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
