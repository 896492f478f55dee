// Retrying with growing pauses, for reaching a portal that is not up yet.
import { setTimeout as sleep } from 'node:timers/promises';

export interface BackoffSchedule {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_BACKOFF: BackoffSchedule = { initialDelayMs: 1_000, maxDelayMs: 30_000 };

/**
 * Calls `attempt` until it succeeds, doubling the pause after each failure up to the maximum.
 * `onFailure` hears about every failed attempt; `signal` ends the waiting with an AbortError.
 */
export async function retryWithBackoff<T>(
  attempt: () => Promise<T>,
  onFailure: (error: unknown, attemptNumber: number, retryInMs: number) => void,
  schedule: BackoffSchedule,
  signal?: AbortSignal,
): Promise<T> {
  let delayMs = schedule.initialDelayMs;
  for (let attemptNumber = 1; ; attemptNumber += 1) {
    signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (error) {
      signal?.throwIfAborted();
      onFailure(error, attemptNumber, delayMs);
      await sleep(delayMs, undefined, { signal });
      delayMs = Math.min(delayMs * 2, schedule.maxDelayMs);
    }
  }
}
