// One large request body at a time: a SCIM group of 100,000 members is some 10 MB of text and
// 15 MB parsed, and the work on it (members compared, rows written, the answer) some more; two
// or three at once took most of the portal's 192 MB heap. A request whose body may be large (a
// Content-Length above the threshold, or none given) waits here, before its body is read, for
// the one slot; if that is not free within the wait it is refused (503, Retry-After), the body
// unread. Small bodies never wait. The slot is given back when the answer is done or the
// connection closed.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export interface LargeBodyGateOptions {
  /** Bodies up to this many bytes (by their Content-Length) pass at once. */
  readonly thresholdBytes: number;
  /** How long a large body waits for the slot before it is refused. */
  readonly waitMs: number;
  /** What the refusal's Retry-After says, in seconds. */
  readonly retryAfterSeconds: number;
  /** The error the surface answers a refused request with (its error handler makes it a 503). */
  readonly busy: () => Error;
}

/** A slot one holder at a time, handed on in the order asked. */
export class OneAtATime {
  #held = false;
  readonly #waiting: (() => void)[] = [];

  /** Resolves with true once the slot is the caller's, or false after `waitMs` without it. */
  acquire(waitMs: number): Promise<boolean> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const granted = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const at = this.#waiting.indexOf(granted);
        if (at !== -1) this.#waiting.splice(at, 1);
        resolve(false);
      }, waitMs);
      this.#waiting.push(granted);
    });
  }

  /** Gives the slot to the next in line, or frees it. */
  release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#held = false;
    else next();
  }
}

/** Makes `app`'s requests with large bodies take turns (see the top of this file). */
export function addLargeBodyGate(app: FastifyInstance, options: LargeBodyGateOptions): void {
  const slot = new OneAtATime();
  app.addHook('preParsing', async (request, reply, payload) => {
    if (!mayBeLarge(request, options.thresholdBytes)) return payload;
    if (!(await slot.acquire(options.waitMs))) {
      void reply.header('retry-after', String(options.retryAfterSeconds));
      throw options.busy();
    }
    // A client gone while it waited (or while the guard before this hook ran) closed its
    // connection already: no close event is left to come, so the slot goes back now.
    if (request.raw.socket.destroyed || reply.raw.destroyed) {
      slot.release();
      throw options.busy();
    }
    releaseWhenDone(reply, () => slot.release());
    return payload;
  });
}

/** A body that may be above the threshold: a larger Content-Length, or a chunked one of unknown length. */
function mayBeLarge(request: FastifyRequest, thresholdBytes: number): boolean {
  const length = request.headers['content-length'];
  if (length === undefined) return request.headers['transfer-encoding'] !== undefined;
  const bytes = Number(length);
  return !Number.isFinite(bytes) || bytes > thresholdBytes;
}

/** Runs `release` once, when the answer has been sent or the connection closed before. */
function releaseWhenDone(reply: FastifyReply, release: () => void): void {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    release();
  };
  reply.raw.once('close', once);
  reply.raw.once('finish', once);
}
