// Elapsed time and deadlines, measured on the monotonic clock (performance.now()). The wall clock
// (Date.now(), new Date()) may be stepped forward or back at any moment (NTP, an administrator, a
// virtual machine resumed): a wait measured on it would end early, cut pending work at once, or
// go on for hours. The monotonic clock only moves forward, at the pace of real time. Dates (kept,
// compared with kept dates, sent on the wire) stay on the wall clock: the portal's Clock.

declare const monotonic: unique symbol;

/**
 * A moment on this process's monotonic clock, in milliseconds: meaningful only against another
 * such moment (never a date, nor comparable with Date.now()).
 */
export type MonotonicMs = number & { readonly [monotonic]: true };

/** Now, on the monotonic clock. */
export function monotonicNow(): MonotonicMs {
  return performance.now() as MonotonicMs;
}

/** Milliseconds gone by since `start`. */
export function elapsedSince(start: MonotonicMs): number {
  return performance.now() - start;
}

/** A moment some time from when it was taken, on the monotonic clock. */
export interface Deadline {
  /** Whether the moment has come. */
  passed(): boolean;
  /** Milliseconds until it comes; 0 once it has. */
  remainingMs(): number;
}

/** The moment `ms` milliseconds from now. */
export function deadlineIn(ms: number): Deadline {
  const at = performance.now() + ms;
  return {
    passed: () => performance.now() >= at,
    remainingMs: () => Math.max(0, at - performance.now()),
  };
}

/**
 * Lets something happen at most once per `intervalMs` (a warning repeated however often its cause
 * comes back). The first time is always allowed, however soon after the process started.
 */
export class AtMostEvery {
  #last: MonotonicMs | null = null;

  constructor(private readonly intervalMs: number) {}

  /** True, and counted, when the last allowed time was `intervalMs` or more ago (or never). */
  allow(): boolean {
    if (this.#last !== null && elapsedSince(this.#last) < this.intervalMs) return false;
    this.#last = monotonicNow();
    return true;
  }
}
