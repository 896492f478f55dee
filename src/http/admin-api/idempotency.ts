// Safe retries for provisioning systems: a POST sent with an `Idempotency-Key` header runs
// once per admin key lineage and Idempotency-Key (a key and the keys rotated from it, never a
// reusable name: a new key with a revoked key's name never gets its answers); a retry within
// 24 hours with the same parameters gets the first answer again (for `create`: the same file,
// never a new key pair), with other parameters 422. Concurrent requests with one key agree on one owner through the
// primary key of `idempotency_records`; the others wait for its answer (up to 30 s, then 409).
//
// The answer of `create` is kept inside the transaction that stores the configuration
// (CreateConfigurationRequest.keepAnswer), so neither can exist without the other, also when
// the portal dies in between: a reservation still pending then means nothing was stored, and
// after STALE_AFTER_MS it is taken over. Answers are sealed with AES-256-GCM under
// DATA/keys/idempotency.key (they hold private keys) and deleted once expired.
//
// A kept answer names what it handed out that can be taken back (src/http/admin-api/hand-outs.ts):
// a configuration, an admin key, a webhook's signing secret, an enrollment token. Once that is
// revoked or replaced the answer is never given again: a retry gets 410 and makes nothing. The
// change that ended it drops the answer itself (src/listeners/kept-answers.ts), and a retry
// reads its state before it answers, for what no change announced (an expiry not swept). The
// calls that keep their answer after their change (all but create) read it once more right after
// keeping it, once no change under way holds what it handed out (awaitChangesOf), so a change
// that ended it in between, whose closing write found the answer still pending, does not leave
// the answer behind. 410, not 409: 409 here means "still being processed, try again later",
// which a client may retry; this key will never be answered again. Answers holding a secret kept
// before they named what they handed out were dropped on upgrade (migration 0042): 410 too.
import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import { z } from 'zod';
import type { PortalContext } from '../../core/context.js';
import { AnswerCipher } from '../../keys/answer-cipher.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../protocol/admin-api.js';
import { deadlineIn } from '../../shared/monotonic.js';
import { formatAtom } from '../../shared/time.js';
import {
  completeIdempotencyRecord,
  deleteExpiredIdempotencyRecord,
  findIdempotencyRecord,
  dropKeptAnswer,
  releaseIdempotencyKey,
  reserveIdempotencyKey,
  type HandedOut,
  type HandOutEnd,
  type IdempotencyRecord,
  type OwnedIdempotencyKey,
  awaitChangesOf,
} from '../../storage/idempotency.js';
import type { Database } from '../../storage/schema.js';
import type { RouteResponse } from '../plumbing/route-response.js';
import { HttpError } from '../plumbing/http-error.js';
import { answerNotKept, endOfHandOut, handOutGone } from './hand-outs.js';
import { sha256Hex } from '../../shared/sha256.js';

/** How long an answer is given again. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long a request waits for another one with the same key to finish. */
const WAIT_FOR_OWNER_MS = 30_000;
const POLL_MS = 25;
/** A reservation this old whose request never finished belongs to a portal that died: it is taken over. */
const STALE_AFTER_MS = 5 * 60 * 1000;

const HEADER_VALUE = /^[\x21-\x7e]{1,255}$/;

const storedAnswer = z.union([
  // A revocation's answer keeps its receipt header: a retry points at the same receipt.
  z.object({ status: z.literal(204), headers: z.record(z.string(), z.string()).optional() }),
  z.object({ status: z.literal(200), json: z.unknown(), headers: z.record(z.string(), z.string()).optional() }),
  z.object({ status: z.literal(200), jsonText: z.string() }),
  z.object({ status: z.literal(200), body: z.string(), headers: z.record(z.string(), z.string()) }),
  // A file of bytes (a signed Apple profile), kept as Base64 since the kept answer is JSON.
  z
    .object({ status: z.literal(200), bodyBase64: z.string(), headers: z.record(z.string(), z.string()) })
    .transform(({ status, bodyBase64, headers }) => ({ status, body: Buffer.from(bodyBase64, 'base64'), headers })),
]);

export interface IdempotentRequest {
  /** The caller's key lineage (AdminCaller.keyLineage). */
  readonly keyLineage: string;
  /** The header's value. */
  readonly idempotencyKey: string;
  /** The call's name. */
  readonly call: string;
  /** What must be equal for a retry: the call, its parameters and the headers its answer depends on. */
  readonly fingerprint: string;
  /**
   * What an answer kept after its change hands out that can be taken back (an admin key, a
   * webhook secret, an enrollment token); absent when it hands out nothing of the kind, or names
   * it as it keeps the answer in its change (create).
   */
  readonly handedOutBy?: (response: RouteResponse) => HandedOut;
}

/**
 * Kept inside the change's transaction: the answer the call is about to give, and what it hands
 * out (`create`: the configuration), whose end drops the answer.
 */
export type KeepAnswer = (trx: Transaction<Database>, response: RouteResponse, handedOut?: HandedOut) => Promise<void>;

export interface IdempotentOutcome {
  readonly response: RouteResponse;
  /** True when this is the answer of an earlier request. */
  readonly replayed: boolean;
}

/** The header's value, or undefined when absent; 400 when malformed. */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !HEADER_VALUE.test(value)) {
    throw new HttpError(400, `invalid "${IDEMPOTENCY_KEY_HEADER}" header: 1 to 255 visible ASCII characters`);
  }
  return value;
}

/** SHA-256 over the call, its parameters (sorted by name) and the headers its answer depends on. */
export function fingerprintOf(
  call: string,
  parameters: Readonly<Record<string, string>>,
  headers: Readonly<Record<string, string>>,
): string {
  const sorted = (record: Readonly<Record<string, string>>) =>
    Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256Hex(JSON.stringify([call, sorted(parameters), sorted(headers)]));
}

export class IdempotentCalls {
  constructor(private readonly ctx: PortalContext) {}

  /**
   * Runs `execute` once for the request's key, or gives the answer of the request that did.
   * `execute` may keep its answer inside its change's transaction (`keep`); otherwise it is
   * kept right after.
   */
  async run(
    request: IdempotentRequest,
    execute: (keep: KeepAnswer) => Promise<RouteResponse>,
  ): Promise<IdempotentOutcome> {
    const cipher = this.#cipher();
    const context = `${request.keyLineage}\n${request.idempotencyKey}`;
    // Measured on the monotonic clock: a step of the wall clock must not end the wait at once.
    const waitForOwner = deadlineIn(WAIT_FOR_OWNER_MS);
    for (;;) {
      const nowDate = this.ctx.clock.now();
      const now = formatAtom(nowDate);
      const existing = await findIdempotencyRecord(this.ctx.db, request.keyLineage, request.idempotencyKey);
      if (existing !== undefined && existing.expiresAt <= now) {
        await deleteExpiredIdempotencyRecord(this.ctx.db, existing, now);
        continue;
      }
      if (existing === undefined) {
        const owner = randomBytes(12).toString('hex');
        const reserved = await reserveIdempotencyKey(this.ctx.db, {
          keyLineage: request.keyLineage,
          idempotencyKey: request.idempotencyKey,
          call: request.call,
          fingerprint: request.fingerprint,
          owner,
          createdAt: now,
          expiresAt: formatAtom(new Date(nowDate.getTime() + IDEMPOTENCY_WINDOW_MS)),
        });
        if (reserved)
          return { response: await this.#execute(request, owner, context, cipher, execute), replayed: false };
        continue; // another request reserved it just now
      }
      if (existing.fingerprint !== request.fingerprint) {
        throw new HttpError(
          422,
          `${IDEMPOTENCY_KEY_HEADER} "${request.idempotencyKey}" was used for another request (other call or parameters) within 24 hours`,
        );
      }
      if (existing.state !== 'pending') {
        return { response: await this.#keptAnswer(request, existing, cipher, context), replayed: true };
      }
      if (nowDate.getTime() - Date.parse(existing.createdAt) > STALE_AFTER_MS) {
        // Its request never finished (its portal died); it stored nothing, or it would be done.
        await releaseIdempotencyKey(this.ctx.db, existing);
        continue;
      }
      if (waitForOwner.passed()) {
        throw new HttpError(
          409,
          `a request with ${IDEMPOTENCY_KEY_HEADER} "${request.idempotencyKey}" is still being processed; try again later`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /**
   * The answer a finished request kept, or the 410 when what it handed out has ended since: read
   * where that lives, and the answer dropped then (whatever dropped it or not yet).
   */
  async #keptAnswer(
    request: IdempotentRequest,
    existing: IdempotencyRecord,
    cipher: AnswerCipher,
    context: string,
  ): Promise<RouteResponse> {
    if (existing.state === 'revoked' || existing.state === 'replaced')
      throw handOutGone(existing.handedOut?.kind ?? 'configuration', existing.state, request.idempotencyKey);
    if (existing.state === 'not-kept') throw answerNotKept(request.idempotencyKey);
    const opened = existing.answer === null ? null : cipher.open(existing.answer, context);
    if (opened === null) {
      this.ctx.logger.error(
        { idempotencyKey: request.idempotencyKey },
        `a kept answer cannot be opened: it was sealed under another ${this.ctx.keys.answerKeyPath} (every portal instance needs the same file)`,
      );
      throw new HttpError(
        409,
        `the answer to ${IDEMPOTENCY_KEY_HEADER} "${request.idempotencyKey}" cannot be given again; the portal log says why`,
      );
    }
    const response: RouteResponse = storedAnswer.parse(JSON.parse(opened));
    if (existing.handedOut !== null) {
      const end = await this.#dropIfEnded(existing, existing.handedOut, response);
      if (end !== null) throw handOutGone(existing.handedOut.kind, end, request.idempotencyKey);
    }
    return response;
  }

  /** Reads whether what a kept answer handed out has ended, and drops the answer when it has. */
  async #dropIfEnded(
    owned: OwnedIdempotencyKey,
    handedOut: HandedOut,
    response: RouteResponse,
  ): Promise<HandOutEnd | null> {
    const end = await endOfHandOut(this.ctx, handedOut, response);
    if (end === null) return null;
    await dropKeptAnswer(this.ctx.db, owned, end);
    this.ctx.logger.info(
      { idempotencyKey: owned.idempotencyKey, handedOut: handedOut.kind, id: handedOut.id, end },
      'a kept answer was dropped: what it handed out has ended',
    );
    return end;
  }

  async #execute(
    request: IdempotentRequest,
    owner: string,
    context: string,
    cipher: AnswerCipher,
    execute: (keep: KeepAnswer) => Promise<RouteResponse>,
  ): Promise<RouteResponse> {
    const owned = { keyLineage: request.keyLineage, idempotencyKey: request.idempotencyKey, owner };
    const keep: KeepAnswer = async (trx, response, handedOut) => {
      const sealed = cipher.seal(storable(response), context);
      // Fails the change when the reservation was taken over meanwhile: then another request runs it.
      const answer = { status: response.status, sealed, handedOut: handedOut ?? null };
      if (!(await completeIdempotencyRecord(trx, owned, answer))) {
        throw new Error(`the reservation of ${IDEMPOTENCY_KEY_HEADER} "${request.idempotencyKey}" was lost`);
      }
    };
    let response: RouteResponse;
    try {
      response = await execute(keep);
    } catch (error) {
      // Only a reservation still pending is given up (nothing was stored): a retry runs the call
      // again. An answer kept with a change that committed stays, and the retry gets it.
      await releaseIdempotencyKey(this.ctx.db, owned).catch((releaseError: unknown) =>
        this.ctx.logger.warn(
          { err: releaseError },
          `could not give up a reservation of ${IDEMPOTENCY_KEY_HEADER}; it is taken over after 5 minutes`,
        ),
      );
      throw error;
    }
    // Calls that did not keep their answer in their transaction (all but create): kept now.
    // A no-op when it was kept already (the record is no longer pending).
    const handedOut = request.handedOutBy?.(response) ?? null;
    const kept = await completeIdempotencyRecord(this.ctx.db, owned, {
      status: response.status,
      sealed: cipher.seal(storable(response), context),
      handedOut,
    });
    // A change that ended what it handed out since this one committed found no answer to drop:
    // read once it has committed (it may have run its closing write and not yet committed).
    if (kept && handedOut !== null) {
      await awaitChangesOf(this.ctx.db, handedOut);
      await this.#dropIfEnded(owned, handedOut, response);
    }
    return response;
  }

  #cipher(): AnswerCipher {
    // Made on first use when generate-secrets did not make it (it is re-read at most once a second).
    if (this.ctx.keys.answerKey() === null) this.ctx.keys.createAnswerKey();
    const key = this.ctx.keys.answerKey();
    if (key === null) throw new Error(`${this.ctx.keys.answerKeyPath} is not 64 hex characters`);
    return new AnswerCipher(key);
  }
}

/** The answer as kept: parts of a listing (which no POST call answers today) joined into one text, bytes as Base64. */
function storable(response: RouteResponse): string {
  if ('body' in response && typeof response.body !== 'string') {
    return JSON.stringify({
      status: response.status,
      bodyBase64: Buffer.from(response.body).toString('base64'),
      headers: response.headers,
    });
  }
  if (!('jsonParts' in response)) return JSON.stringify(response);
  const text = Buffer.concat(
    response.jsonParts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)),
  ).toString();
  return JSON.stringify({ status: response.status, jsonText: text });
}
