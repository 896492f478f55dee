// Works off the webhook outbox: every portal instance runs one worker. A delivery is claimed for
// one attempt under a lease (a conditional update: of several instances exactly one wins it), its
// attempt is recorded as started, the body is signed and sent, and the attempt's outcome and the
// delivery's next state are written together. A receiver gets one attempt at a time, oldest due
// first (a delivery waiting for its retry does not hold up later events); one that fails is tried
// again after 30 s, 1 min, 2 min, … (at most an hour apart) until `webhooks.retryFor` after the
// event, then the delivery is given up (`failed`). A receiver that gives no answer at all rests as
// long (none of its deliveries is attempted meanwhile, by any instance: the rest is in the
// database), so a black hole does not hold a slot for each new event. An instance killed
// mid-attempt leaves its lease to run out; then any instance takes the delivery over:
// at-least-once, and the body's `id` lets receivers drop a repeat.
import { randomBytes } from 'node:crypto';
import { WEBHOOK_HEADERS } from '../../protocol/webhooks.js';
import { addDuration, subtractDuration } from '../../shared/iso-duration.js';
import { messageOf } from '../../shared/error-message.js';
import { formatAtom } from '../../shared/time.js';
import { finishAttempt, startAttempt, type AttemptOutcome } from '../../storage/webhook-attempts.js';
import {
  claimDelivery,
  dueDeliveries,
  finishDelivery,
  giveUpExpiredDeliveries,
  type DeliveryOutcome,
  type StoredDelivery,
} from '../../storage/webhook-deliveries.js';
import { endReceiverRest, findWebhook, restReceiver } from '../../storage/webhooks.js';
import type { Db } from '../../storage/database.js';
import type { PortalContext } from '../context.js';
import { signingSecrets } from './secrets.js';
import { sendWebhook, TargetGuard } from './sender.js';
import { webhookSignature } from '../../keys/webhook-signature.js';
import { WakeableLoop } from '../../shared/wakeable-loop.js';

/** The first retry waits this long; each next one twice as long as the one before … */
const FIRST_RETRY_MS = 30_000;
/** … but never longer than this. */
const LONGEST_RETRY_MS = 3_600_000;
/** With nothing to do, the outbox is looked at this often (a change on this instance wakes the worker at once). */
const POLL_MS = 1_000;
/** Receivers sent to at once by one instance. */
const PARALLEL_RECEIVERS = 8;
/** Receivers whose oldest due delivery is read per look at the outbox. */
const BATCH = 200;
/**
 * A receiver that gave no answer rests this long before its next attempt of any delivery, twice
 * as long after each further one (at most LONGEST_RETRY_MS): a black hole holds a slot for the
 * whole timeout, and sending it each new event in turn would leave the other receivers waiting.
 */
const FIRST_REST_MS = FIRST_RETRY_MS;
/** Receivers whose last attempt's order an instance keeps, to send to the least recent first. */
const MAX_REMEMBERED_RECEIVERS = 10_000;
/** A lease outlasts the attempt's deadline by this much: time to record the outcome. */
const LEASE_MARGIN_MS = 15_000;
/** Deliveries older than retryFor are looked for (and given up) this often, by the portal's clock. */
const GIVE_UP_EVERY_MS = 60_000;

/** What one attempt did. */
export interface AttemptReport {
  readonly deliveryId: string;
  readonly eventId: string;
  readonly attempt: number;
  readonly outcome: Exclude<AttemptOutcome, 'sending'>;
  readonly status: number | null;
  readonly durationMs: number;
  readonly detail: string | null;
}

/** How long a delivery is held for one attempt. */
export function leaseMilliseconds(ctx: PortalContext): number {
  return ctx.config.webhooks.timeoutMs + LEASE_MARGIN_MS;
}

export function newLeaseToken(): string {
  return randomBytes(12).toString('hex');
}

/** When attempt `attempts + 1` is due after attempt `attempts` failed at `now`. */
export function nextAttemptAt(now: Date, attempts: number): Date {
  const wait = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), LONGEST_RETRY_MS);
  return new Date(now.getTime() + wait);
}

/**
 * Sends a delivery this caller holds the lease of (`leaseToken`), records the attempt and moves
 * the delivery on: delivered, tried again later (`retry`, until retryFor is over), or failed.
 */
export async function attemptDelivery(
  ctx: PortalContext,
  delivery: StoredDelivery,
  leaseToken: string,
  options: { readonly retry: boolean; readonly signal: AbortSignal },
): Promise<AttemptReport> {
  const started = ctx.clock.now();
  const startedAt = formatAtom(started);
  const attempt = delivery.attempts;
  const webhook = await findWebhook(ctx.db, delivery.webhookId);
  const report = (
    outcome: AttemptReport['outcome'],
    status: number | null,
    durationMs: number,
    detail: string | null,
  ): AttemptReport => ({
    deliveryId: delivery.deliveryId,
    eventId: delivery.eventId,
    attempt,
    outcome,
    status,
    durationMs,
    detail,
  });
  if (webhook === undefined) {
    await finishDelivery(ctx.db, delivery.deliveryId, leaseToken, { state: 'cancelled', at: startedAt });
    return report('refused', null, 0, 'the subscription was deleted');
  }
  await startAttempt(ctx.db, delivery.deliveryId, attempt, startedAt);
  const finish = (done: AttemptReport, sent = true) =>
    recordAttempt(ctx, delivery, leaseToken, done, { retry: options.retry, sent });
  let secrets: string[];
  try {
    secrets = signingSecrets(ctx, webhook, startedAt);
  } catch (error) {
    // Nothing is sent unsigned. A failed attempt like any other, tried again until retryFor,
    // rather than one never finished whose lease runs out again and again.
    // Not the receiver's fault: no rest for it, which would hold up the instances that can sign.
    return finish(report('failed', null, 0, messageOf(error)), false);
  }
  const timestamp = Math.floor(started.getTime() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'vpn-portal-webhooks',
    [WEBHOOK_HEADERS.signature]: webhookSignature(secrets, timestamp, delivery.payload),
    [WEBHOOK_HEADERS.eventId]: delivery.eventId,
    [WEBHOOK_HEADERS.eventType]: delivery.eventType,
    [WEBHOOK_HEADERS.attempt]: String(attempt),
  };
  const clockStart = performance.now();
  const result = await sendWebhook(
    { url: new URL(webhook.url), headers, body: delivery.payload },
    new TargetGuard(ctx.config.webhooks, ctx.config.listen.host),
    ctx.config.webhooks.timeoutMs,
    options.signal,
  );
  const durationMs = Math.round(performance.now() - clockStart);
  return finish(
    result.kind === 'answered'
      ? report(
          result.status >= 200 && result.status < 300 ? 'delivered' : 'failed',
          result.status,
          durationMs,
          result.excerpt === '' ? null : result.excerpt,
        )
      : report(options.signal.aborted ? 'interrupted' : result.kind, null, durationMs, result.reason),
  );
}

/**
 * Records the attempt's outcome and the delivery's next state together, and (`sent`: the
 * receiver was tried) what its answer, or none, does to the receiver's rest.
 */
async function recordAttempt(
  ctx: PortalContext,
  delivery: StoredDelivery,
  leaseToken: string,
  done: AttemptReport,
  options: { readonly retry: boolean; readonly sent: boolean },
): Promise<AttemptReport> {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    // With the lease's end, so that no instance takes the receiver's next delivery in between;
    // first, as deleting a subscription locks its row before its deliveries' (no deadlock).
    if (options.sent) await noteAnswer(trx, delivery.webhookId, done, now);
    await finishAttempt(trx, delivery.deliveryId, done.attempt, {
      outcome: done.outcome,
      status: done.status,
      durationMs: done.durationMs,
      detail: done.detail,
    });
    await finishDelivery(trx, delivery.deliveryId, leaseToken, nextState(ctx, delivery, done, now, options.retry));
  });
  return done;
}

/**
 * An answer (any status) ends a receiver's rest; none starts or lengthens it. Kept with the
 * subscription, so every portal instance lets the receiver rest.
 */
async function noteAnswer(db: Db, webhookId: string, done: AttemptReport, now: Date): Promise<void> {
  if (done.outcome === 'interrupted' || done.outcome === 'refused') return;
  if (done.status !== null) {
    await endReceiverRest(db, webhookId);
    return;
  }
  // A rest over for an hour belongs to an earlier outage: this silence starts the count anew.
  await restReceiver(db, webhookId, formatAtom(new Date(now.getTime() - LONGEST_RETRY_MS)), (unanswered) => {
    const rest = Math.min(FIRST_REST_MS * 2 ** Math.min(unanswered - 1, 20), LONGEST_RETRY_MS);
    return formatAtom(new Date(now.getTime() + rest));
  });
}

function nextState(
  ctx: PortalContext,
  delivery: StoredDelivery,
  done: AttemptReport,
  now: Date,
  retry: boolean,
): DeliveryOutcome {
  const at = formatAtom(now);
  if (done.outcome === 'delivered') return { state: 'delivered', at };
  // Stopping is not the receiver's fault: the next instance (or this one, restarted) tries at once.
  if (done.outcome === 'interrupted') return { state: 'pending', nextAttemptAt: at };
  if (!retry) return { state: 'failed', at };
  const next = nextAttemptAt(now, done.attempt);
  const giveUpAt = addDuration(new Date(delivery.createdAt), ctx.config.webhooks.retryFor);
  return next > giveUpAt ? { state: 'failed', at } : { state: 'pending', nextAttemptAt: formatAtom(next) };
}

/**
 * The outbox worker of this portal instance. Receivers are sent to independently (a slow one
 * holds up only its own deliveries), at most PARALLEL_RECEIVERS at once, one attempt each.
 */
export class WebhookDeliveryWorker {
  readonly #ctx: PortalContext;
  /** The attempt in flight per subscription. */
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #loop: WakeableLoop;
  /** The order in which this instance last started an attempt to each receiver: the least recent goes first. */
  readonly #lastStarted = new Map<string, number>();
  #starts = 0;
  /** When deliveries older than retryFor were last given up (the portal's clock), or null before the first look. */
  #gaveUpAt: number | null = null;

  constructor(ctx: PortalContext) {
    this.#ctx = ctx;
    this.#loop = new WakeableLoop({
      round: async (signal) => (await this.#startDue(signal)) > 0,
      failed: (error) =>
        ctx.logger.warn({ err: error }, 'webhook deliveries could not be read or claimed; trying again shortly'),
      inFlight: () => this.#inFlight.values(),
      pollMs: POLL_MS,
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Something was written to the outbox, or an attempt ended: look now rather than at the next poll. */
  wake(): void {
    this.#loop.wake();
  }

  /** Ends the loop; attempts in flight are cut off and recorded as interrupted, due again at once. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /**
   * Claims the oldest due delivery of each receiver with nothing in flight, and starts sending it;
   * how many were started. When there are more such receivers than free slots, those this
   * instance sent to least recently go first: by age alone, the next event of slow receivers with
   * a backlog (older than any of a receiver that keeps up) would take every slot freed, and a
   * receiver that keeps up would wait until they caught up.
   */
  async #startDue(signal: AbortSignal): Promise<number> {
    await this.#giveUpExpired();
    const room = PARALLEL_RECEIVERS - this.#inFlight.size;
    if (room <= 0) return 0;
    const now = this.#ctx.clock.now();
    const due = await dueDeliveries(this.#ctx.db, formatAtom(now), BATCH);
    const lastStarted = (webhookId: string) => this.#lastStarted.get(webhookId) ?? -1;
    const firstPerReceiver = due
      .filter((delivery) => !this.#inFlight.has(delivery.webhookId))
      // Stable: receivers never sent to, or sent to alike, stay oldest due first.
      .sort((one, other) => lastStarted(one.webhookId) - lastStarted(other.webhookId));
    let started = 0;
    for (const { webhookId, deliveryId } of firstPerReceiver) {
      if (started >= room || signal.aborted) break;
      const claimedAt = this.#ctx.clock.now();
      // A rest begun since the outbox was read is in the claim's own condition.
      if (this.#inFlight.has(webhookId)) continue;
      const leaseToken = newLeaseToken();
      const until = formatAtom(new Date(claimedAt.getTime() + leaseMilliseconds(this.#ctx)));
      const claimed = await claimDelivery(this.#ctx.db, deliveryId, formatAtom(claimedAt), {
        until,
        token: leaseToken,
      });
      // Another instance was quicker: it sends this attempt.
      if (claimed === undefined) continue;
      started++;
      // Subscriptions deleted long ago would stay here: past a bound the order starts afresh.
      if (this.#lastStarted.size > MAX_REMEMBERED_RECEIVERS) this.#lastStarted.clear();
      this.#lastStarted.set(webhookId, this.#starts++);
      const attempt = this.#send(claimed, leaseToken, signal).finally(() => {
        this.#inFlight.delete(webhookId);
        this.wake();
      });
      this.#inFlight.set(webhookId, attempt);
    }
    return started;
  }

  /**
   * Gives up the deliveries whose event is older than retryFor, attempted or not: only an attempt
   * gave one up, so those of a receiver that rests (one attempt per rest, of its oldest) stayed
   * pending, piling up while it was away and sent days late once it was back. Once a minute by
   * the portal's clock (and at once when it was set back).
   */
  async #giveUpExpired(): Promise<void> {
    const now = this.#ctx.clock.now();
    if (this.#gaveUpAt !== null && now.getTime() >= this.#gaveUpAt && now.getTime() - this.#gaveUpAt < GIVE_UP_EVERY_MS)
      return;
    const given = await giveUpExpiredDeliveries(
      this.#ctx.db,
      formatAtom(now),
      formatAtom(subtractDuration(now, this.#ctx.config.webhooks.retryFor)),
    );
    this.#gaveUpAt = now.getTime();
    if (given > 0)
      this.#ctx.logger.info({ deliveries: given }, 'webhook deliveries older than webhooks.retryFor were given up');
  }

  async #send(claimed: StoredDelivery, leaseToken: string, signal: AbortSignal): Promise<void> {
    try {
      const report = await attemptDelivery(this.#ctx, claimed, leaseToken, { retry: true, signal });
      this.#ctx.logger.info(
        {
          delivery: report.deliveryId,
          event: claimed.eventType,
          attempt: report.attempt,
          outcome: report.outcome,
          status: report.status,
        },
        'webhook attempt',
      );
    } catch (error) {
      // The lease runs out and the delivery is attempted again.
      this.#ctx.logger.warn({ err: error, delivery: claimed.deliveryId }, 'a webhook attempt could not be recorded');
    }
  }
}
