// A process's time awake: the monotonic clock, except that a stretch in which the process did
// not run (stopped with SIGSTOP, a paused VM, a stalled event loop) counts as a few seconds only.
// The node agent measures on it what must not lapse while it stands still: the memory of
// removals (a late add that reached its socket just before it stood still would otherwise find
// the removal that overtook it forgotten, and put a revoked peer back), and a ProxyGuard
// tunnel's idleness (its clients kept sending while it stood still). Kept current by a tick, so
// time spent running counts in full whether or not anything asks.

/** How often the clock looks at the monotonic clock while nothing else asks. */
const TICK_MS = 1_000;
/** The most one look counts: a longer gap is a stretch the process stood still. */
const MAX_STEP_MS = 5_000;

export class AwakeClock {
  readonly #monotonicMs: () => number;
  #awakeMs = 0;
  #lastLookMs: number;
  #timer: NodeJS.Timeout | null = null;

  constructor(monotonicMs: () => number = () => performance.now()) {
    this.#monotonicMs = monotonicMs;
    this.#lastLookMs = monotonicMs();
  }

  /** Milliseconds awake since the clock was made. */
  now(): number {
    const look = this.#monotonicMs();
    const step = look - this.#lastLookMs;
    this.#lastLookMs = look;
    this.#awakeMs += Math.min(Math.max(step, 0), MAX_STEP_MS);
    return this.#awakeMs;
  }

  /** Starts the tick (it never keeps the process alive). */
  start(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => this.now(), TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
