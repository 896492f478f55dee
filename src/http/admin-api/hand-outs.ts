// What a kept answer (Idempotency-Key) hands out that can be taken back, read where it lives: a
// configuration (`create`), an admin key (`create_admin_key`), a webhook's signing secret
// (`create_webhook`, `rotate_webhook_secret`), an enrollment token (`enrollment_token`). Once that
// is revoked or replaced the answer is not given again; these are the reads a retry makes before
// it gives an answer (and a request makes after it kept its own), and the 410 that says why.
import { z } from 'zod';
import { endOfMadeAdminKey } from '../../core/access/index.js';
import type { PortalContext } from '../../core/context.js';
import { endOfMadeEnrollmentToken } from '../../core/enrollment/index.js';
import { revocationOfConfiguration } from '../../core/issuing/index.js';
import { endOfWebhookSecret } from '../../core/webhooks/index.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../protocol/admin-api.js';
import type { HandedOut, HandedOutKind, HandOutEnd } from '../../storage/idempotency.js';
import { HttpError } from '../plumbing/http-error.js';
import type { RouteResponse } from '../plumbing/route-response.js';

/** The secret in a webhook answer (create_webhook, rotate_webhook_secret), as kept. */
const webhookSecretAnswer = z.object({ secret: z.string() });

/**
 * Whether what `answer` handed out still holds: null while it does, else how it ended. Read
 * from where it lives, so this holds also for what no change announced (an expiry, a row deleted
 * by hand) and for an answer kept just after a change that ended it.
 */
export async function endOfHandOut(
  ctx: PortalContext,
  handedOut: HandedOut,
  answer: RouteResponse,
): Promise<HandOutEnd | null> {
  switch (handedOut.kind) {
    case 'configuration':
      return (await revocationOfConfiguration(ctx, handedOut.id)) === null ? null : 'revoked';
    case 'admin-key':
      return endOfMadeAdminKey(ctx, handedOut.id);
    case 'webhook-secret': {
      const kept = 'json' in answer ? webhookSecretAnswer.safeParse(answer.json) : null;
      if (kept === null || !kept.success) throw new Error('a kept webhook answer holds no secret');
      return endOfWebhookSecret(ctx, handedOut.id, kept.data.secret);
    }
    case 'enrollment-token':
      return endOfMadeEnrollmentToken(ctx, handedOut.id);
  }
}

/** What each kind is, and what a retry may do instead, for the 410 and the OpenAPI document. */
const WORDS: {
  readonly [K in HandedOutKind]: {
    readonly what: string;
    readonly ended: { readonly [E in HandOutEnd]: string };
    readonly instead: string;
    /** The 410 in the OpenAPI document. */
    readonly doc: string;
  };
} = {
  configuration: {
    what: 'the configuration {key} created',
    ended: {
      revoked: 'has been revoked (deleted, expired, or its user disabled)',
      replaced:
        "was extended since: its certificate was re-issued (extend's answer holds the new one, the kept file the old one)",
    },
    instead: 'a new configuration',
    doc: 'The configuration this Idempotency-Key created has been revoked (deleted, expired, or its user disabled), or extended with a new certificate (OpenVPN): its answer is not given again, and nothing is created',
  },
  'admin-key': {
    what: 'the admin key {key} made',
    ended: { revoked: 'has been revoked or has expired', replaced: 'has been rotated' },
    instead: 'a new key',
    doc: 'The admin key this Idempotency-Key made has been revoked, rotated or has expired: its answer and secret are not given again, and no key is made',
  },
  'webhook-secret': {
    what: 'the webhook secret {key} handed out',
    ended: {
      revoked: 'is gone with its subscription (deleted)',
      replaced: 'has been replaced by a rotation',
    },
    instead: 'a new one',
    doc: "The secret this Idempotency-Key handed out is no longer the subscription's (deleted, or its secret rotated): its answer is not given again, and nothing is made",
  },
  'enrollment-token': {
    what: 'the enrollment token {key} made',
    ended: {
      revoked: 'can no longer be redeemed (revoked, used up, expired, or its user disabled or destroyed)',
      replaced: 'can no longer be redeemed',
    },
    instead: 'a new token',
    doc: 'The enrollment token this Idempotency-Key made can no longer be redeemed (revoked, used up, expired, or its user disabled or destroyed): its answer is not given again, and no token is made',
  },
};

/** The 410 a retry gets once what its kept answer handed out has ended. */
export function handOutGone(handedOut: HandedOutKind, end: HandOutEnd, idempotencyKey: string): HttpError {
  const words = WORDS[handedOut];
  const what = words.what.replace('{key}', `${IDEMPOTENCY_KEY_HEADER} "${idempotencyKey}"`);
  return new HttpError(
    410,
    `${what} ${words.ended[end]}; its answer is not given again: send a new ${IDEMPOTENCY_KEY_HEADER} for ${words.instead}`,
  );
}

/**
 * The 410 a retry gets when its kept answer held a secret but was kept before answers named what
 * they handed out: dropped on upgrade (migration 0042), as nothing tells whether that was revoked.
 */
export function answerNotKept(idempotencyKey: string): HttpError {
  return new HttpError(
    410,
    `the answer to ${IDEMPOTENCY_KEY_HEADER} "${idempotencyKey}" was kept by an earlier portal version and not kept across the upgrade (it held a secret that may have been revoked since); it is not given again: what the first request made stands unless revoked, send a new ${IDEMPOTENCY_KEY_HEADER} to make another`,
  );
}

/** The 410 of a call whose answer hands out `kind`, for the OpenAPI document. */
export function handOutGoneDoc(kind: HandedOutKind): string {
  return `${WORDS[kind].doc}. Also when its answer was kept by an earlier portal version and not kept across the upgrade (it held a secret); what the first request made stands unless revoked`;
}
