// When each peer's current run of handshakes began (handshakes never 3 minutes apart: the
// "online" rule), so that the portal dates a session's start by its first handshake even when it
// looked at the node minutes later. WireGuard keeps only the latest handshake, and a device
// online for long shakes hands again every 2 minutes: a portal that did not look for more than
// that (down, cut off from the node, a long reconcileInterval) saw only a late one, and an abuse
// report of the session's first minutes named nobody. The agent looks at its peers every 10 to
// 30 seconds by itself, so it sees every handshake of a run. A run it could not have seen begin
// (under way when the agent started, begun while it did not look for longer than a live device's
// handshakes are apart, or around a setting of the wall clock) has no known start: the portal
// then goes by what it saw itself.
import type { WireGuardKey } from '../../shared/ids.js';
import { ONLINE_THRESHOLD_MS } from '../../shared/online.js';

/**
 * Two looks further apart than this may miss a handshake of a live device (they come every
 * 2 minutes): a silence seen across such a gap may not have been one.
 */
const LONGEST_SEEING_GAP_MS = 90_000;
/** The wall clock moved against the monotonic one by more than this between two looks: it was set. */
const CLOCK_STEP_MS = 5_000;
/**
 * After the wall clock was set, handshakes written before it and after it are apart by the step:
 * runs begun until every live device shook hands again (2 minutes), and the silence rule's 3
 * minutes on, have no known start.
 */
const AFTER_CLOCK_STEP_MS = 5 * 60_000;

/** Epoch milliseconds, updated in place: a listing of 65,536 peers allocates little here. */
interface Run {
  sinceMs: number;
  lastMs: number;
  /** Whether the agent saw the run begin. */
  known: boolean;
  /** The listing that last showed the peer with a handshake. */
  seen: number;
}

export class OnlineRuns {
  readonly #runs = new Map<WireGuardKey, Run>();
  #listing = 0;
  /** When the last listing was taken (a monotonic clock, ms); null before the first. */
  #lastLookMs: number | null = null;
  /** The wall clock less the monotonic one at the last listing. */
  #wallOffsetMs: number | null = null;
  /** Until when (monotonic) after the wall clock was set no run's start is known. */
  #blindUntilMs = Number.NEGATIVE_INFINITY;

  /**
   * Notes a full listing of the interface's peers (their latest handshakes), taken at `lookMs`
   * by a monotonic clock and `wallMs` by the wall clock WireGuard dates handshakes by. A peer
   * without a handshake, or missing, has no run.
   */
  observe(
    peers: readonly { readonly publicKey: WireGuardKey; readonly latestHandshake: Date | null }[],
    lookMs: number,
    wallMs: number,
  ): void {
    const listing = ++this.#listing;
    const offsetMs = wallMs - lookMs;
    if (this.#wallOffsetMs !== null && Math.abs(offsetMs - this.#wallOffsetMs) > CLOCK_STEP_MS) {
      // The times of runs begun before are of the old clock: none is known any more.
      this.#blindUntilMs = lookMs + AFTER_CLOCK_STEP_MS;
      for (const run of this.#runs.values()) run.known = false;
    }
    this.#wallOffsetMs = offsetMs;
    // Whether every handshake since the last listing is one this listing may be the first to show.
    const seeing =
      this.#lastLookMs !== null && lookMs - this.#lastLookMs <= LONGEST_SEEING_GAP_MS && lookMs >= this.#blindUntilMs;
    this.#lastLookMs = lookMs;
    for (const { publicKey, latestHandshake } of peers) {
      if (latestHandshake === null) continue;
      const lastMs = latestHandshake.getTime();
      const run = this.#runs.get(publicKey);
      if (run === undefined) {
        this.#runs.set(publicKey, { sinceMs: lastMs, lastMs, known: seeing, seen: listing });
        continue;
      }
      const gapMs = lastMs - run.lastMs;
      if (gapMs < 0 || gapMs >= ONLINE_THRESHOLD_MS) {
        run.sinceMs = lastMs;
        run.known = seeing;
      }
      run.lastMs = lastMs;
      run.seen = listing;
    }
    for (const [publicKey, run] of this.#runs) if (run.seen !== listing) this.#runs.delete(publicKey);
  }

  /** The first handshake of the peer's current run; null when it has none, or the agent did not see it begin. */
  since(publicKey: WireGuardKey): Date | null {
    const run = this.#runs.get(publicKey);
    return run === undefined || !run.known ? null : new Date(run.sinceMs);
  }

  /** A removed peer's run ends: added again, it starts anew. */
  forget(publicKey: WireGuardKey): void {
    this.#runs.delete(publicKey);
  }
}
